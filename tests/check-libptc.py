#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering of libptc, checked on the tree and the built library:
  - libptc.so exports nothing but ptc_* (and its version node PTC_0);
  - the subcommands rebuilt on the API include no core header nor cli/cli-core.h (curl's
    rule: the tool uses only the library's external interface), directly or through cli/cli.h;
  - docs/libptc.md's example host is examples/host.c (built and run by meson test).
Usage: check-libptc.py SOURCE_ROOT LIBPTC_SO"""
import re
import subprocess
import sys

root, lib = sys.argv[1], sys.argv[2]
bad = []

out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                     text=True).stdout
# "ptc_engine_new@@PTC_0": the name, then its version node.
names = [l.split()[-1].split("@")[0] for l in out.splitlines() if l.strip()]
for name in names:
    if not name.startswith("ptc_") and name != "PTC_0":
        bad.append(f"{lib}: exports {name}")
if "ptc_engine_new" not in names or "PTC_0" not in names:
    bad.append(f"{lib}: ptc_engine_new is not exported at PTC_0")

for f in ["src/cli/cmd-run.c", "src/cli/cmd-tool.c", "src/cli/cmd-schema.c", "src/cli/cmd-doctor.c",
          "src/cli/cmd-mcp.c", "src/cli/cli-common.c", "src/cli/cli.h", "src/cli/cmd-serve.c",
          "src/cli/cmd-session.c", "src/cli/cmd-run-session.c", "src/cli/serve-client.c"]:
    with open(f"{root}/{f}") as fh:
        for n, line in enumerate(fh, 1):
            if re.match(r'\s*#\s*include\s*"(core/|cli/cli-core\.h)', line):
                bad.append(f"{f}:{n}: includes a core header: {line.strip()}")

# docs/libptc.md shows examples/host.c, which the suite builds and runs: the two agree.
with open(f"{root}/docs/libptc.md") as fh:
    blocks = re.findall(r"^```c\n(.*?)^```", fh.read(), re.S | re.M)
with open(f"{root}/examples/host.c") as fh:
    if blocks != [fh.read()]:
        bad.append("docs/libptc.md: its C block is not examples/host.c")

for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
