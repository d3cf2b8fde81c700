// SPDX-License-Identifier: MIT
// Scenario: connect (the SDK negotiates initialize), ping, server info, tools/list.
import { main } from './lib.mjs';

await main(async (spec, open) => {
    const { client } = await open();
    const ping = await client.ping();
    const listed = await client.listTools();
    return {
        server_version: client.getServerVersion() ?? null,
        server_capabilities: client.getServerCapabilities() ?? null,
        instructions: client.getInstructions() ?? null,
        ping,
        tools: listed.tools,
        next_cursor: listed.nextCursor ?? null
    };
});
