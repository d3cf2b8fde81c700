// SPDX-License-Identifier: MIT
//
// Shared helpers for the MCP client scenarios that tests/integration/test_mcp_sdk.py runs.
//
// Every scenario script is started as `node tests/mcp/<scenario>.mjs '<spec JSON>'`, where the
// spec is {"command": ..., "args": [...], "env": {...}, "cwd": ..., ...scenario parameters}.
// It starts the server with the official SDK's Client and StdioClientTransport, does one
// scenario and prints ONE JSON object with what it observed on stdout. An unexpected
// exception prints {"exception": {...}} and exits 1. Besides what the scenario records, the
// report always has:
//   stdout_lines   every line the server wrote to stdout, raw (a second listener on the pipe)
//   stderr         everything the server wrote to stderr
//   client_errors  what the SDK reported through Client.onerror (unparsable lines, responses
//                  to unknown ids, progress for unknown tokens, ...)
//   exit           {code, signal, after_close_ms}: how the server ended once the client
//                  closed its stdin (close() waits 20 s before the SDK may send SIGTERM, so
//                  a signal here means the server did not exit by itself)

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export function readSpec() {
    const raw = process.argv[2] ?? process.env.PTC_MCP_SPEC;
    if (!raw) throw new Error('usage: node <scenario>.mjs SPEC_JSON (or PTC_MCP_SPEC)');
    const spec = JSON.parse(raw);
    for (const k of ['command', 'args', 'env'])
        if (spec[k] === undefined) throw new Error(`spec has no '${k}'`);
    return spec;
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

export function now() {
    return performance.now();
}

/* A JSON-safe picture of an error (McpError has .code and .data). */
export function describeError(e) {
    if (!(e instanceof Error)) return { name: typeof e, message: String(e) };
    const d = { name: e.name, message: e.message };
    if (e.code !== undefined) d.code = e.code;
    if (e.data !== undefined) d.data = e.data;
    return d;
}

/* Liveness of a pid as /proc tells it: a zombie counts as gone. */
export function pidAlive(pid) {
    let stat;
    try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
        return false;
    }
    const state = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[0];
    return state !== 'Z' && state !== 'X';
}

/* Wait up to @ms for @pid to be gone; returns the ms it took, or null when it is still alive. */
export async function waitGone(pid, ms) {
    const t0 = now();
    while (now() - t0 < ms) {
        if (!pidAlive(pid)) return Math.round(now() - t0);
        await sleep(20);
    }
    return pidAlive(pid) ? null : Math.round(now() - t0);
}

/* Wait up to @ms for a non-empty file; returns its content or null. */
export async function waitFile(path, ms) {
    const t0 = now();
    while (now() - t0 < ms) {
        try {
            const s = readFileSync(path, 'utf8');
            if (s.trim() !== '') return s;
        } catch {
            /* not yet */
        }
        await sleep(20);
    }
    return null;
}

/*
 * Start the server described by @spec and connect the SDK client (the SDK negotiates
 * initialize), with @options.capabilities (default none) and @options.setup(client) run
 * before connecting. Returns a session whose .report (@report) collects the common
 * observations.
 */
export function newReport() {
    return { stdout_lines: [], stderr: '', client_errors: [], exit: null };
}

export async function connect(spec, report = newReport(), options = {}) {
    const transport = new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        cwd: spec.cwd,
        stderr: 'pipe'
    });
    transport.stderr.on('data', chunk => {
        report.stderr += chunk.toString('utf8');
    });

    let child = null;
    let closedAt = null;
    let exited = null;
    const exitPromise = new Promise(resolve => {
        exited = resolve;
    });
    // Hook the child process as soon as it is spawned, before the SDK sends initialize
    // (the server never speaks first), to see every raw stdout line and the exit status.
    const start = transport.start.bind(transport);
    transport.start = async () => {
        await start();
        child = transport._process;
        let buf = '';
        child.stdout.on('data', chunk => {
            buf += chunk.toString('utf8');
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
                report.stdout_lines.push(buf.slice(0, i));
                buf = buf.slice(i + 1);
            }
        });
        child.stdout.on('end', () => {
            if (buf !== '') report.stdout_lines.push(buf);
            buf = '';
        });
        child.on('exit', (code, signal) => {
            report.exit = {
                code,
                signal,
                after_close_ms: closedAt === null ? null : Math.round(now() - closedAt)
            };
            exited();
        });
    };

    const client = new Client({ name: 'ptc-sdk-test', version: '1.0.0' },
                              { capabilities: options.capabilities ?? {} });
    client.onerror = e => {
        report.client_errors.push(String(e && e.message ? e.message : e));
    };
    // Request handlers (an elicitation form) are set before initialize.
    if (options.setup) options.setup(client);
    await client.connect(transport);
    report.server_pid = transport.pid;

    return {
        client,
        transport,
        report,
        /* Write raw bytes to the server's stdin, past the SDK (malformed-input cases). */
        writeRaw(text) {
            child.stdin.write(text);
        },
        /* End ptc's stdin and give it 20 s (a hang guard) to exit by itself, then close the
         * client (the SDK ends stdin, waits 2 s, then SIGTERM/SIGKILL). Not the SDK's close
         * alone: on a busy machine an exit can take more than its 2 s without a bug. */
        async close() {
            closedAt = now();
            try {
                child.stdin.end();
            } catch {
                /* already closed */
            }
            await Promise.race([exitPromise, sleep(20000)]);
            await client.close();
            await Promise.race([exitPromise, sleep(5000)]);
            // Let the stderr pipe drain.
            await sleep(50);
        }
    };
}

/*
 * Run a scenario: @fn(spec, open) returns an object of observations; `await open()` starts
 * the server and connects (connect() above); that session is closed here and its report
 * merged into the output, also when @fn throws. Prints one JSON
 * object. An exception prints {"exception": ...} (and whatever was observed) and exits 1.
 */
export async function main(fn) {
    const spec = readSpec();
    const deadline = setTimeout(() => {
        process.stdout.write(JSON.stringify({ exception: { name: 'Timeout', message: `scenario did not finish within ${spec.deadline_ms ?? 25000} ms` } }) + '\n');
        process.exit(3);
    }, spec.deadline_ms ?? 25000);
    deadline.unref();
    let out = {};
    let session = null;
    let report = null;
    let rc = 0;
    try {
        const r = await fn(spec, async options => {
            // The report exists before connecting, so that a failed connect still shows
            // what the server wrote.
            report = newReport();
            session = await connect(spec, report, options);
            return session;
        });
        out = { ...r };
    } catch (e) {
        out.exception = { ...describeError(e), stack: e && e.stack ? String(e.stack) : undefined };
        process.stderr.write(`scenario failed: ${e && e.stack ? e.stack : e}\n`);
        rc = 1;
    }
    if (session) {
        try {
            await session.close();
        } catch (e) {
            out.close_exception = describeError(e);
        }
    } else if (report) {
        await sleep(50); // let the failed server's stderr drain
    }
    if (report) Object.assign(out, report);
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(rc));
}

/* The parts of a CallToolResult a test asserts on. */
export function pickResult(r) {
    return {
        content: r.content,
        structuredContent: r.structuredContent,
        isError: r.isError
    };
}
