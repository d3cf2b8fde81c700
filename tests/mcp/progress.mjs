// SPDX-License-Identifier: MIT
// Scenario: a call with an onprogress callback (the SDK sends _meta.progressToken) running
// spec.code; records every progress notification, in order, and the result.
import { main, now, pickResult } from './lib.mjs';

await main(async (spec, open) => {
    const { client } = await open();
    await client.listTools();
    const events = [];
    const t0 = now();
    const r = await client.callTool({ name: spec.tool ?? 'execute_code', arguments: spec.arguments }, undefined, {
        onprogress: p => events.push({ ...p, at_ms: Math.round(now() - t0) })
    });
    return { events, result: pickResult(r), result_at_ms: Math.round(now() - t0) };
});
