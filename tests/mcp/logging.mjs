// SPDX-License-Identifier: MIT
// Scenario: the client sets the server's logging level to spec.level (unless absent), then
// makes the calls of spec.calls one after the other; every notifications/message the
// server sends is recorded (its params), in order, with each call's result.
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describeError, main, pickResult } from './lib.mjs';

await main(async (spec, open) => {
    const messages = [];
    const { client } = await open({
        setup: c => c.setNotificationHandler(LoggingMessageNotificationSchema, n => {
            messages.push(n.params);
        })
    });
    if (spec.level) await client.setLoggingLevel(spec.level);
    const calls = [];
    for (const c of spec.calls ?? []) {
        try {
            const r = await client.callTool({ name: c.name, arguments: c.arguments });
            calls.push({ result: pickResult(r) });
        } catch (e) {
            calls.push({ error: describeError(e) });
        }
    }
    return { messages, calls };
});
