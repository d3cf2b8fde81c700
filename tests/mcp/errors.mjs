// SPDX-License-Identifier: MIT
// Scenario: bad input within a live SDK session. Raw lines written past the SDK (not JSON;
// JSON that is not a request), an unknown method, tools/call with bad params, an unknown
// tool; then a ping and a good call show that the session still works. The server's answers
// to the raw lines (id null) are in stdout_lines; the SDK reports them via client_errors.
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describeError, main, pickResult, sleep } from './lib.mjs';

async function outcome(promise) {
    try {
        const r = await promise;
        return r && r.content !== undefined ? { result: pickResult(r) } : { result: r };
    } catch (e) {
        return { error: describeError(e) };
    }
}

await main(async (spec, open) => {
    const s = await open();
    const { client } = s;
    await client.listTools();
    const raw = {};
    for (const line of spec.raw_lines ?? []) {
        const before = s.report.stdout_lines.length;
        s.writeRaw(line + '\n');
        // Wait for the answer line (a bounded wait: no answer is a finding, not a hang).
        for (let i = 0; i < 150 && s.report.stdout_lines.length === before; i++) await sleep(20);
        raw[line] = s.report.stdout_lines.slice(before);
    }
    const cases = {};
    cases.unknown_method = await outcome(client.request({ method: 'no/such/method', params: {} }, ResultSchema));
    for (const [k, args] of Object.entries(spec.bad_arguments ?? {}))
        cases[k] = await outcome(client.callTool({ name: 'execute_code', arguments: args }));
    cases.unknown_tool = await outcome(client.callTool({ name: 'no_such_tool', arguments: {} }));
    cases.ping = await outcome(client.ping());
    cases.good_call = await outcome(client.callTool({ name: 'execute_code', arguments: { code: 'print("still here")' } }));
    return { raw, cases };
});
