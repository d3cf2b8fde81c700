// SPDX-License-Identifier: MIT
// Scenario: the calls of spec.calls ([{name, arguments}]) all started at once over one
// connection; records each result with its start/end offsets and the wall time of the batch.
import { main, now, pickResult } from './lib.mjs';

await main(async (spec, open) => {
    const { client } = await open();
    await client.listTools();
    const t0 = now();
    const results = await Promise.all(
        spec.calls.map(async c => {
            const s = now() - t0;
            const r = await client.callTool({ name: c.name, arguments: c.arguments });
            return { result: pickResult(r), start_ms: Math.round(s), end_ms: Math.round(now() - t0) };
        })
    );
    return { wall_ms: Math.round(now() - t0), calls: results };
});
