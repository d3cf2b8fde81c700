// SPDX-License-Identifier: MIT
// Scenario: the client closes the connection (the SDK ends ptc's stdin) while a call is
// still running spec.slow_code (which writes its pids to spec.pid_file, then sleeps).
// Records how the pending call settled, how ptc exited (report.exit) and how long each pid
// took to disappear after the close.
import { describeError, main, pickResult, waitFile, waitGone } from './lib.mjs';

await main(async (spec, open) => {
    const s = await open();
    await s.client.listTools();
    let settled = null;
    const pending = s.client
        .callTool({ name: 'execute_code', arguments: { code: spec.slow_code } })
        .then(
            r => {
                settled = { resolved: pickResult(r) };
            },
            e => {
                settled = { rejected: describeError(e) };
            }
        );
    const pidText = await waitFile(spec.pid_file, 10000);
    await s.close();
    await pending;
    const pids = pidText ? pidText.trim().split(/\s+/).map(Number) : [];
    const goneMs = [];
    for (const pid of pids) goneMs.push(await waitGone(pid, 15000));
    return { pid_file_seen: pidText !== null, pending: settled, pids, gone_ms: goneMs };
});
