// SPDX-License-Identifier: MIT
// Scenario: connect, tools/list, then the calls of spec.calls ([{name, arguments}]) one
// after the other. Each call is recorded as {result} or {error} (a rejected promise), with
// its duration.
import { describeError, main, now, pickResult } from './lib.mjs';

await main(async (spec, open) => {
    const { client } = await open();
    const listed = await client.listTools();
    const calls = [];
    for (const c of spec.calls ?? []) {
        const t0 = now();
        try {
            const r = await client.callTool({ name: c.name, arguments: c.arguments });
            calls.push({ result: pickResult(r), ms: Math.round(now() - t0) });
        } catch (e) {
            calls.push({ error: describeError(e), ms: Math.round(now() - t0) });
        }
    }
    return { tool_names: listed.tools.map(t => t.name), tools: listed.tools, calls };
});
