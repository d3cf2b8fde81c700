// SPDX-License-Identifier: MIT
// Scenario: a client that answers ptc's policy asks through MCP elicitation (unless
// spec.no_capability), then the calls of spec.calls one after the other. spec.answers lists
// what the form answers, one per elicitation (the last repeats): {action, decision} (a
// decision is sent as the form's content), {action, delay_ms}, or "never": no answer, the
// handler waits until the server withdraws the request (notifications/cancelled). Records
// each elicitation's params, which ones were withdrawn, and each call.
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describeError, main, now, pickResult, sleep } from './lib.mjs';

await main(async (spec, open) => {
    const asked = [];
    const withdrawn = [];
    const answers = spec.answers ?? [{ action: 'decline' }];
    const { client } = await open({
        capabilities: spec.no_capability ? {} : { elicitation: {} },
        setup: c => {
            if (spec.no_capability) return;
            c.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
                const i = asked.length;
                asked.push(req.params);
                const a = answers[Math.min(i, answers.length - 1)];
                if (a === 'never')
                    return await new Promise(resolve => {
                        extra.signal.addEventListener('abort', () => {
                            withdrawn.push(i);
                            resolve({ action: 'cancel' });
                        });
                    });
                if (a.delay_ms) await sleep(a.delay_ms);
                return a.decision ? { action: a.action, content: { decision: a.decision } }
                                  : { action: a.action };
            });
        }
    });
    const calls = [];
    for (const c of spec.calls ?? []) {
        const t0 = now();
        try {
            const r = await client.callTool({ name: c.name, arguments: c.arguments }, undefined,
                                            { timeout: 120000 });
            calls.push({ result: pickResult(r), ms: Math.round(now() - t0) });
        } catch (e) {
            calls.push({ error: describeError(e), ms: Math.round(now() - t0) });
        }
    }
    return { asked, withdrawn, calls };
});
