# SPDX-License-Identifier: MIT
"""The start of a fake `ptc agent` for tests that play the target's side of the remote
stream (docs/remote.md, "The stream") by hand: a Python script run as the channel command
(`--backend "exec:python3 FILE"`). FAKE_AGENT_PRELUDE defines MAGIC, frame(type, obj) and
read_frame(); the test appends what its agent does."""

FAKE_AGENT_PRELUDE = r'''
import json, struct, sys
MAGIC = b"\x89PTC\r\n\x1a\n"
inp, out = sys.stdin.buffer, sys.stdout.buffer

def frame(t, obj):
    p = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    out.write(struct.pack(">IB", len(p), t) + p)
    out.flush()

def read_frame():
    h = inp.read(5)
    n, t = struct.unpack(">IB", h)
    return t, json.loads(inp.read(n))

'''
