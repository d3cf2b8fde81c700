# SPDX-License-Identifier: MIT
"""Path rules hold whatever the spelling (docs/policy.md "Paths", issue 35 item 1).

A deny rule on <tmp>/protected/** must hold for every way a script can name a file there:
".." after a symlink the script planted, a magic link (/proc/self/cwd), a symlink to the
protected directory, search_files rooted at the directory, its parent or a link to it, and a
symlink flipped between the policy's check and the tool's open. Each bypass runs through the
real binary twice: as a script's tool call (`ptc run`) and as `ptc tool`. On 2194e2c every
one of the read/write/patch/search bypasses returned or changed the protected file.
"""

import json
import os
import threading
import time

import pytest

from conftest import expect

SECRET = "TOPSECRET-7f3a91"
SECRET_RE = "TOPSECRET-7f3a9[1]"
TOOLS = "[read_file, write_file, patch, search_files]"


@pytest.fixture
def tree(ptc):
    """<tmp>/protected/s (the secret), <tmp>/sub, <tmp>/pub/p.txt; in the workdir
    (<tmp>/work) link -> <tmp>/sub and plink -> <tmp>/protected. Returns (root, config)."""
    root = os.path.realpath(ptc.tmp)
    os.mkdir(f"{root}/protected")
    with open(f"{root}/protected/s", "w") as f:
        f.write(SECRET + "\n")
    os.mkdir(f"{root}/sub")
    os.mkdir(f"{root}/pub")
    with open(f"{root}/pub/p.txt", "w") as f:
        f.write("public line\n")
    os.symlink(f"{root}/sub", ptc.workdir / "link")
    os.symlink(f"{root}/protected", ptc.workdir / "plink")
    cfg = ptc.write_config(f"""
        policy:
          rules:
            - {{tool: {TOOLS}, match: "{root}/protected/**", action: deny}}
        """)
    return root, cfg


def call(ptc, cfg, how, tool, args):
    """One tool call through the real binary: as a script's call or as `ptc tool`."""
    if how == "tool":
        r = ptc.run_ptc(["tool", "--config", str(cfg), tool, json.dumps(args)], input=b"")
        expect(r, 0)
        return r.data
    r = ptc.run_file(f"""
        import json
        import hermes_tools
        print(json.dumps(getattr(hermes_tools, {tool!r})(**{args!r})))
        """, "--config", str(cfg), input=b"")
    expect(r, 0, "success")
    return r.output_json()


def secret_intact(root):
    with open(f"{root}/protected/s") as f:
        return f.read() == SECRET + "\n"


# The spellings of <root>/protected/s; "{root}" is filled in per test.
SPELLINGS = [
    "link/../protected/s",              # ".." after a symlink: the kernel's parent, not the text's
    "link/../work/link/../protected/s",
    "/proc/self/cwd/../protected/s",    # a magic link
    "plink/s",                          # a symlink to the protected directory
    "plink/../protected/s",
]

HOWS = ["script", "tool"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_read_file_spellings_are_denied(ptc, tree, how, spelling):
    root, cfg = tree
    d = call(ptc, cfg, how, "read_file", {"path": spelling})
    assert SECRET not in json.dumps(d), d
    assert d.get("status") == "denied", d


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("spelling", SPELLINGS + ["link/../protected/new/deep.txt"])
def test_write_file_spellings_are_denied(ptc, tree, how, spelling):
    root, cfg = tree
    d = call(ptc, cfg, how, "write_file", {"path": spelling, "content": "PWNED\n"})
    assert d.get("status") == "denied", d
    assert secret_intact(root)
    assert sorted(os.listdir(f"{root}/protected")) == ["s"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_patch_replace_spellings_are_denied(ptc, tree, how, spelling):
    root, cfg = tree
    d = call(ptc, cfg, how, "patch",
             {"path": spelling, "old_string": SECRET, "new_string": "PWNED"})
    assert d.get("status") == "denied", d
    assert SECRET not in json.dumps(d), d
    assert secret_intact(root)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_patch_v4a_spellings_are_denied(ptc, tree, how, spelling):
    root, cfg = tree
    text = (f"*** Begin Patch\n*** Update File: {spelling}\n@@\n-{SECRET}\n+PWNED\n"
            "*** End Patch\n")
    d = call(ptc, cfg, how, "patch", {"mode": "patch", "patch": text})
    assert d.get("status") == "denied", d
    assert secret_intact(root)


@pytest.mark.parametrize("how", HOWS)
def test_patch_v4a_add_through_a_link_is_denied(ptc, tree, how):
    root, cfg = tree
    text = "*** Begin Patch\n*** Add File: link/../protected/new.txt\n+x\n*** End Patch\n"
    d = call(ptc, cfg, how, "patch", {"mode": "patch", "patch": text})
    assert d.get("status") == "denied", d
    assert sorted(os.listdir(f"{root}/protected")) == ["s"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("ops", [
    "*** Delete File: link/../protected/s\n",
    "*** Move File: link/../protected/s -> ../pub/stolen.txt\n",
    "*** Move File: ../pub/p.txt -> link/../protected/planted.txt\n",
    "*** Update File: ../pub/p.txt\n*** Move to: link/../protected/planted.txt\n"
    "@@\n-public line\n+moved\n",
])
def test_patch_v4a_delete_and_move_through_a_link_are_denied(ptc, tree, how, ops):
    root, cfg = tree
    d = call(ptc, cfg, how, "patch", {"mode": "patch",
                                      "patch": f"*** Begin Patch\n{ops}*** End Patch\n"})
    assert d.get("status") == "denied", d
    assert secret_intact(root)
    assert sorted(os.listdir(f"{root}/protected")) == ["s"]
    assert sorted(os.listdir(f"{root}/pub")) == ["p.txt"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("where", ["{root}/protected", "{root}", "plink", "link/..",
                                   "/proc/self/cwd/.."])
def test_search_files_never_returns_a_denied_file(ptc, tree, how, where):
    root, cfg = tree
    path = where.format(root=root)
    # A regex that matches the secret but not its own text in the script file.
    content = call(ptc, cfg, how, "search_files", {"pattern": SECRET_RE, "path": path})
    names = call(ptc, cfg, how, "search_files", {"pattern": "*", "target": "files",
                                                   "path": path})
    for d in (content, names):
        text = json.dumps(d)
        assert SECRET not in text, d
        assert "/s\"" not in text and "protected" not in text.replace(
            "Denied by policy", ""), d
    if where == "{root}":
        # The rest of the tree is still searched, and the result says something was withheld.
        assert any(f.endswith("pub/p.txt") for f in names["files"]), names
        assert names.get("withheld_by_policy", 0) >= 1, names
        hit = call(ptc, cfg, how, "search_files", {"pattern": "public lin[e]", "path": path})
        assert hit["total_count"] == 1, hit


def test_search_prunes_a_denied_directory_met_through_a_symlinked_dir(ptc, tree):
    """A plain-path rule denies the directory itself: the walk never enters it, whether the
    search starts above it or at a symlink that leads into it."""
    root, _ = tree
    cfg = ptc.write_config(f"""
        policy:
          rules:
            - {{tool: search_files, match: "{root}/protected", action: deny}}
        """)
    os.symlink(root, ptc.workdir / "rootlink")
    for path in ("rootlink", root, "plink"):
        d = call(ptc, cfg, "tool", "search_files", {"pattern": SECRET_RE, "path": path})
        assert SECRET not in json.dumps(d), d


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("spelling", ["/proc/self/root{root}/pub/p.txt",
                                      "/proc/self/cwd/link/../pub/p.txt",
                                      "/proc/thread-self/cwd/../pub/p.txt"])
def test_magic_links_are_refused_by_every_file_tool(ptc, tree, how, spelling):
    """Magic links are refused even where no rule applies: their target is an object, not a
    path the rules could judge (docs/policy.md)."""
    root, cfg = tree
    path = spelling.format(root=root)
    d = call(ptc, cfg, how, "read_file", {"path": path})
    assert d.get("status") == "denied" and "magic link" in d["error"], d
    d = call(ptc, cfg, how, "write_file", {"path": path, "content": "x\n"})
    assert d.get("status") == "denied" and "magic link" in d["error"], d
    with open(f"{root}/pub/p.txt") as f:
        assert f.read() == "public line\n"


@pytest.mark.parametrize("how", HOWS)
def test_plain_paths_still_work(ptc, tree, how):
    """The resolver changes nothing for what the rules allow: links, "..", new directories."""
    root, cfg = tree
    d = call(ptc, cfg, how, "read_file", {"path": "link/../pub/p.txt"})
    assert "public line" in d["content"], d
    d = call(ptc, cfg, how, "write_file", {"path": "link/new/dir/f.txt", "content": "hi\n"})
    assert d["bytes_written"] == 3, d
    with open(f"{root}/sub/new/dir/f.txt") as f:
        assert f.read() == "hi\n"
    d = call(ptc, cfg, how, "patch", {"path": "link/new/dir/f.txt", "old_string": "hi",
                                      "new_string": "ho"})
    assert d["success"] is True, d
    with open(f"{root}/sub/new/dir/f.txt") as f:
        assert f.read() == "ho\n"


def start_flipper(w, link, targets, flips=10000):
    """A thread that, once the script has made w/started, flips w/<link> between @targets
    @flips times, then makes w/done. Returns (thread, stop event)."""
    stop = threading.Event()

    def flipper():
        while not os.path.exists(f"{w}/started") and not stop.is_set():
            time.sleep(0.01)
        for i in range(flips):
            if stop.is_set():
                break
            os.symlink(targets[i % len(targets)], f"{w}/{link}.tmp")
            os.replace(f"{w}/{link}.tmp", f"{w}/{link}")
            if i % 16 == 0:
                time.sleep(0.0005)
        with open(f"{w}/done", "w"):
            pass

    th = threading.Thread(target=flipper)
    th.start()
    return th, stop


def test_a_flipped_directory_link_never_gets_a_write_into_the_protected_dir(ptc, tree):
    """The race for writes: workdir/flipdir flips between a permitted directory and the
    protected one 10,000 times while the script creates files through it with write_file
    and V4A "Add File" in a loop; none may land in the protected directory."""
    root, cfg = tree
    w = str(ptc.workdir)
    os.symlink(f"{root}/pub", f"{w}/flipdir")
    th, stop = start_flipper(w, "flipdir", [f"{root}/protected", f"{root}/pub"])
    try:
        r = ptc.run_file("""
            import json, os
            from hermes_tools import write_file, patch
            n = 0
            open("started", "w").close()
            while not os.path.exists("done") and n < 50000:
                write_file(f"flipdir/w{n}.txt", "x\\n")
                patch(mode="patch", patch=f"*** Begin Patch\\n*** Add File: flipdir/v{n}.txt\\n"
                                          "+x\\n*** End Patch\\n")
                n += 1
            print(json.dumps({"n": n}))
            """, "--config", str(cfg), "--timeout", "600", "--max-tool-calls", "100001",
            input=b"", timeout=900)
    finally:
        stop.set()
        th.join()
    expect(r, 0, "success")
    assert r.output_json()["n"] > 0
    assert sorted(os.listdir(f"{root}/protected")) == ["s"]
    assert secret_intact(root)


def test_a_flipped_directory_link_never_gets_a_delete_in_the_protected_dir(ptc, tree):
    """The race for V4A's Delete File: flipdir flips between a directory holding a
    throw-away "s" and the protected one while the script recreates and deletes flipdir/s in
    a loop; the protected s survives."""
    root, cfg = tree
    w = str(ptc.workdir)
    os.symlink(f"{root}/pub", f"{w}/flipdir")
    th, stop = start_flipper(w, "flipdir", [f"{root}/protected", f"{root}/pub"])
    try:
        r = ptc.run_file("""
            import json, os
            from hermes_tools import write_file, patch
            n = 0
            open("started", "w").close()
            while not os.path.exists("done") and n < 50000:
                write_file("flipdir/s", "throw-away\\n")
                patch(mode="patch", patch="*** Begin Patch\\n*** Delete File: flipdir/s\\n"
                                          "*** End Patch\\n")
                n += 1
            print(json.dumps({"n": n}))
            """, "--config", str(cfg), "--timeout", "600", "--max-tool-calls", "100001",
            input=b"", timeout=900)
    finally:
        stop.set()
        th.join()
    expect(r, 0, "success")
    assert r.output_json()["n"] > 0
    assert secret_intact(root)


def test_a_directory_swapped_for_a_link_mid_search_is_not_followed(ptc, tree):
    """The race for search_files' walk: pub/d flips between a real directory (pub/d/e/x.txt)
    and a symlink to the protected directory (which has e/s2 with the secret) 10,000 times
    while the script searches pub in a loop. The walk lists d as a directory and opens d and
    d/e later by path: with no symlink allowed on the way, the protected files are never
    read, named or counted."""
    root, cfg = tree
    w = str(ptc.workdir)
    pub, prot = f"{root}/pub", f"{root}/protected"
    os.makedirs(f"{prot}/e")
    with open(f"{prot}/e/s2", "w") as f:
        f.write(SECRET + "\n")
    os.makedirs(f"{pub}/d/e")
    with open(f"{pub}/d/e/x.txt", "w") as f:
        f.write("TOPSECRET-decoy\n")
    os.symlink(prot, f"{pub}/d.link")
    stop = threading.Event()

    def swapper():
        while not os.path.exists(f"{w}/started") and not stop.is_set():
            time.sleep(0.01)
        for i in range(10000):
            if stop.is_set():
                break
            if i % 2 == 0:    # the directory out, the link in
                os.rename(f"{pub}/d", f"{root}/d.hold")
                os.rename(f"{pub}/d.link", f"{pub}/d")
            else:             # and back
                os.rename(f"{pub}/d", f"{pub}/d.link")
                os.rename(f"{root}/d.hold", f"{pub}/d")
            if i % 16 == 0:
                time.sleep(0.0005)
        with open(f"{w}/done", "w"):
            pass

    th = threading.Thread(target=swapper)
    th.start()
    try:
        r = ptc.run_file(f"""
            import json, os
            from hermes_tools import search_files
            n = leaks = 0
            open("started", "w").close()
            while not os.path.exists("done") and n < 20000:
                for args in ({{"pattern": "TOPSECRET-[0-9a-z]+"}},
                             {{"pattern": "*", "target": "files"}}):
                    d = search_files(path={pub!r}, **args)
                    text = json.dumps(d)
                    if {SECRET!r} in text or "s2" in text:
                        leaks += 1
                    n += 1
            print(json.dumps({{"n": n, "leaks": leaks}}))
            """, "--config", str(cfg), "--timeout", "600", "--max-tool-calls", "100001",
            input=b"", timeout=900)
    finally:
        stop.set()
        th.join()
    expect(r, 0, "success")
    d = r.output_json()
    assert d["n"] > 0 and d["leaks"] == 0, d


def test_a_flipped_symlink_never_reads_the_protected_file(ptc, tree):
    """The race: a thread flips workdir/flip between a permitted file and the protected one
    10,000 times while the script calls read_file("flip") in a loop. Whatever the
    interleaving, the protected content never comes back (tool-chase.c: the tool judges the
    descriptor it then reads). No timing is asserted; the run's timeout is a hang guard."""
    root, cfg = tree
    w = str(ptc.workdir)
    os.symlink(f"{root}/pub/p.txt", f"{w}/flip")
    stop = threading.Event()

    def flipper():
        # Wait for the script's first call, then flip.
        while not os.path.exists(f"{w}/started") and not stop.is_set():
            time.sleep(0.01)
        targets = [f"{root}/protected/s", f"{root}/pub/p.txt"]
        for i in range(10000):
            if stop.is_set():
                break
            os.symlink(targets[i % 2], f"{w}/flip.tmp")
            os.replace(f"{w}/flip.tmp", f"{w}/flip")
            if i % 16 == 0:
                time.sleep(0.0005)
        with open(f"{w}/done", "w"):
            pass

    th = threading.Thread(target=flipper)
    th.start()
    try:
        r = ptc.run_file(f"""
            import json, os
            from hermes_tools import read_file
            n = leaks = public = denied = 0
            open("started", "w").close()
            while not os.path.exists("done") and n < 100000:
                d = read_file("flip")
                n += 1
                if {SECRET!r} in json.dumps(d):
                    leaks += 1
                elif "public line" in (d.get("content") or ""):
                    public += 1
                elif d.get("status") == "denied":
                    denied += 1
            print(json.dumps({{"n": n, "leaks": leaks, "public": public, "denied": denied}}))
            """, "--config", str(cfg), "--timeout", "600", "--max-tool-calls", "100001",
            input=b"", timeout=900)
    finally:
        stop.set()
        th.join()
    expect(r, 0, "success")
    d = r.output_json()
    assert d["leaks"] == 0, d
    # Every call was answered one way or the other (no budget or error cut the loop short).
    assert d["n"] > 0 and d["public"] + d["denied"] == d["n"], d


@pytest.mark.parametrize("how", HOWS)
def test_an_ask_rule_is_put_for_the_real_path(ptc, tree, how):
    """An ask rule binds the object too: with nobody to answer and policy.headless deny, the
    spelling through a link is refused; with headless allow it runs once, noted, and the
    tool's own pass does not ask again for what the gate asked."""
    root, _ = tree
    for headless, allowed in (("deny", False), ("allow", True)):
        cfg = ptc.write_config(f"""
            policy:
              headless: {headless}
              rules:
                - {{tool: read_file, match: "{root}/protected/**", action: ask}}
            """, name=f"ask-{headless}.yaml")
        d = call(ptc, cfg, how, "read_file", {"path": "link/../protected/s"})
        if allowed:
            assert SECRET in d["content"], d
            assert d["approval"].startswith("not asked (policy.rules[0])"), d
        else:
            assert d.get("status") == "denied" and SECRET not in json.dumps(d), d
            assert f"{root}/protected/s" in d["error"], d


@pytest.mark.parametrize("how", HOWS)
def test_a_rule_without_match_is_judged_once_for_the_call(ptc, tree, how):
    """A rule without `match` is about the call, not a path: the gate's answer covers the
    tool's own pass, and search_files withholds nothing for it."""
    root, _ = tree
    cfg = ptc.write_config("""
        policy:
          headless: allow
          rules:
            - {tool: "*", action: ask}
        """, name="ask-all.yaml")
    d = call(ptc, cfg, how, "search_files", {"pattern": "public lin[e]", "path": root})
    assert d["total_count"] == 1 and "withheld_by_policy" not in d, d
    d = call(ptc, cfg, how, "read_file", {"path": "link/../pub/p.txt"})
    assert "public line" in d["content"], d
    assert d["approval"].startswith("not asked (policy.rules[0])"), d
