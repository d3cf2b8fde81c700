// SPDX-License-Identifier: MIT
// Scenario: cancellation through the SDK. A call runs spec.slow_code (which writes its pids,
// one per line, to spec.pid_file and then sleeps); once the file is there and at least
// spec.abort_after_ms have passed, the AbortController aborts it: the SDK rejects the promise
// and sends notifications/cancelled. Then: how long each pid took to disappear, a second call
// (spec.after_code) on the same connection, and a short wait so that a late response to the
// cancelled request (which the server must not send) would show up in client_errors.
import { describeError, main, now, pickResult, sleep, waitFile, waitGone } from './lib.mjs';

await main(async (spec, open) => {
    const { client } = await open();
    await client.listTools();
    const ac = new AbortController();
    const t0 = now();
    let settled = null;
    let abortAt = null;
    const first = client
        .callTool({ name: 'execute_code', arguments: { code: spec.slow_code } }, undefined, { signal: ac.signal })
        .then(
            r => {
                settled = { resolved: pickResult(r) };
            },
            e => {
                settled = { rejected: describeError(e), ms_after_abort: Math.round(now() - abortAt) };
            }
        );
    const pidText = await waitFile(spec.pid_file, 10000);
    // setTimeout may fire up to a millisecond early against performance.now(): wait until
    // the time has really passed, so the abort comes no earlier than asked.
    const abortAfter = spec.abort_after_ms ?? 500;
    while (now() - t0 < abortAfter) await sleep(abortAfter - (now() - t0));
    const settledBeforeAbort = settled;
    abortAt = now();
    ac.abort(spec.abort_reason ?? 'cancelled by the test');
    await first;
    const pids = pidText ? pidText.trim().split(/\s+/).map(Number) : [];
    const goneMs = [];
    for (const pid of pids) goneMs.push(await waitGone(pid, 15000));
    const t1 = now();
    let second;
    try {
        second = { result: pickResult(await client.callTool({ name: 'execute_code', arguments: { code: spec.after_code } })) };
    } catch (e) {
        second = { error: describeError(e) };
    }
    second.ms = Math.round(now() - t1);
    await sleep(spec.linger_ms ?? 300);
    return {
        pid_file_seen: pidText !== null,
        abort_at_ms: Math.round(abortAt - t0),
        settled_before_abort: settledBeforeAbort,
        first: settled,
        pids,
        gone_ms: goneMs,
        second
    };
});
