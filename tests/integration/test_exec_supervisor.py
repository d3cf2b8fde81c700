# SPDX-License-Identifier: MIT
"""Terminal rules on every program a command runs (issue 35 item 2, docs/policy.md "What is
judged at exec"): a deny rule on a harmless marker program holds for every shell spelling of
tests/integration/data/exec-spellings.txt, run for real (as `ptc tool terminal` and as a
script's calls); the hardline list holds for the execs of a harmless `rm` stand-in; an ask
pauses the process until it is answered; where the kernel gives no user notification the
result says the rules fell back to the text check."""

import json
import os
import shutil
import subprocess
import textwrap
import time

import pytest

from conftest import expect
import pty_util

DATA = os.path.join(os.path.dirname(__file__), "data", "exec-spellings.txt")

DENY = """
    policy:
      rules:
        - {tool: terminal, match: "ptc-marker", action: deny, message: "no markers"}
    """


def spellings():
    out = []
    with open(DATA) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                out.append(line.replace("<NL>", "\n"))
    return out


def setup_scratch(ptc):
    """bin/ptc-marker (records that it ran into ./ran) first on PATH; the scratch dir is
    the workdir."""
    b = ptc.workdir / "bin"
    b.mkdir(exist_ok=True)
    m = b / "ptc-marker"
    m.write_text(f'#!/bin/sh\necho "$0 $*" >> {ptc.workdir}/ran\n')
    m.chmod(0o755)
    ptc.env["PATH"] = f"{b}:{ptc.env['PATH']}"
    return ptc.workdir / "ran"


def tool(ptc, command, *opts, env=None):
    r = ptc.run_ptc(["tool", *opts, "terminal", json.dumps({"command": command, "timeout": 30})],
                    input=b"", env=env, cwd=str(ptc.workdir))
    assert r.rc == 0, r
    return json.loads(r.stdout)


def supervised(ptc):
    res = tool(ptc, "true")
    return not res.get("warnings")


@pytest.fixture
def sup(ptc):
    ran = setup_scratch(ptc)
    if not supervised(ptc):
        pytest.skip("no seccomp user notification here: " + str(tool(ptc, "true")["warnings"]))
    return ran


def clean(p):
    if p.exists():
        p.unlink()


def test_the_data_file_has_at_least_60_spellings():
    assert len(spellings()) >= 60


def test_every_spelling_is_refused_as_ptc_tool(ptc, sup):
    cfg = ptc.write_config(DENY)
    effective, ran_anyway = [], []
    for s in spellings():
        clean(sup)
        tool(ptc, s)  # the control: no rule, it runs the marker (or the tool is missing)
        if not sup.exists():
            continue
        effective.append(s)
        clean(sup)
        res = tool(ptc, s, "--config", str(cfg))
        if sup.exists():
            ran_anyway.append((s, res))
    assert not ran_anyway, ran_anyway
    # The spellings the control ran are real ones, and enough of them.
    print("effective", len(effective), sorted(set(spellings()) - set(effective)))
    assert len(effective) >= 60, (len(effective), set(spellings()) - set(effective))


def test_every_spelling_is_refused_as_a_scripts_call(ptc, sup):
    cfg = ptc.write_config(DENY)
    (ptc.workdir / "spellings.json").write_text(json.dumps(spellings()))
    r = ptc.run(f"""
        import json, os
        from hermes_tools import terminal
        out = []
        for s in json.load(open("spellings.json")):
            res = terminal(s, timeout=30)
            out.append([s, os.path.exists({str(sup)!r}), res.get("output", "")[-400:]])
            if os.path.exists({str(sup)!r}):
                os.unlink({str(sup)!r})
        print(json.dumps(out))
        """, "--config", str(cfg), input=b"", cwd=str(ptc.workdir), timeout=600)
    expect(r, 0, "success")
    out = r.output_json()
    assert len(out) == len(spellings())
    assert [o for o in out if o[1]] == []
    # What the kernel-level check refused is said in the output, rule and program named.
    brace = next(o for o in out if o[0] == "{ptc-marker,x}")
    assert "ptc refused to run" in brace[2] and "ptc-marker x" in brace[2], brace
    assert "policy.rules[0]" in brace[2] and "no markers" in brace[2], brace


def test_the_refusal_is_eperm_and_the_command_goes_on(ptc, sup):
    cfg = ptc.write_config(DENY)
    res = tool(ptc, "/usr/bin/t?ue; {ptc-marker,x}; echo rc=$?; p=ptc-marker; $p; echo rc=$?",
               "--config", str(cfg))
    assert not sup.exists()
    out = res["output"]
    assert "Operation not permitted" in out, out
    assert out.count("rc=126") == 2, out
    assert "[ptc refused to run" in out, out
    assert res["exit_code"] == 0


RM_SPELLINGS = [
    "{rm,-rf,/}",
    "x=/; rm -rf $x",
    "$(echo rm) -rf /",
    "r=rm; $r -rf /",
    "env rm -rf /",
    "echo / | xargs rm -rf",
    "bash <<< 'rm -rf /'",
    "find / -maxdepth 0 -exec rm -rf {} \\;",
    "timeout 5 rm -rf /",
    "{rm,-rf,/etc}",
]


def test_the_hardline_list_holds_for_the_execs_of_a_stand_in(ptc, sup):
    # A harmless `rm` first on PATH that only records its arguments.
    rec = ptc.workdir / "rm-ran"
    rm = ptc.workdir / "bin" / "rm"
    rm.write_text(f'#!/bin/sh\necho "$*" >> {rec}\n')
    rm.chmod(0o755)
    res = tool(ptc, "{rm,-rf,x}")  # the control: not on the list, it reaches the stand-in
    assert rec.read_text() == "-rf x\n", res
    rec.unlink()
    for s in RM_SPELLINGS:
        res = tool(ptc, s)
        assert not rec.exists(), (s, res, rec.read_text())
        said = (res.get("output") or "") + (res.get("error") or "")
        assert "BLOCKED (hardline)" in said, (s, res)


def test_an_ask_headless_deny_refuses_and_headless_allow_runs(ptc, sup):
    cfg = ptc.write_config("""
        policy:
          headless: deny
          rules:
            - {tool: terminal, match: "ptc-marker", action: ask}
        """)
    res = tool(ptc, "{ptc-marker,x}", "--config", str(cfg))
    assert not sup.exists(), res
    assert "policy.headless is deny" in res["output"], res
    cfg = ptc.write_config("""
        policy:
          rules:
            - {tool: terminal, match: "ptc-marker", action: ask}
        """, name="allow.yaml")
    res = tool(ptc, "{ptc-marker,x}", "--config", str(cfg))
    assert sup.exists(), res
    # Never silent: the output says nobody was asked, and why.
    assert "[ptc ran " in res["output"] and "ptc-marker x: not asked (policy.rules[0])" \
        in res["output"] and "policy.headless is allow" in res["output"], res


class Pty(pty_util.Pty):
    EXPECT_TIMEOUT = 20  # hang guards
    FINISH_TIMEOUT = 60


def test_an_ask_pauses_the_process_until_answered(ptc, sup):
    cfg = ptc.write_config("""
        policy:
          rules:
            - {tool: terminal, match: "ptc-marker", action: ask}
        """)
    script = ptc.path("ask.py")
    script.write_text(textwrap.dedent("""
        from hermes_tools import terminal
        print(terminal("echo before > before; {ptc-marker,x}; echo rc=$?", timeout=1)["output"])
        print(terminal("{ptc-marker,y}; echo rc=$?")["output"])
        """))
    t = Pty(ptc, ["run", "--config", str(cfg), str(script)], )
    prompt = t.expect("Allow?")
    assert "ptc-marker x" in prompt, prompt
    # Paused at its exec: what came before ran, the marker did not.
    assert (ptc.workdir / "before").exists() and not sup.exists()
    # The ask stops the command's clock: answered past its 1 s timeout, it is not killed.
    time.sleep(2.5)
    t.send("o\n")
    t.expect("Allow?")
    assert sup.read_text().endswith(" x\n")
    t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0, (res, err)
    assert "timed out" not in res["output"], res["output"]
    first, second = res["output"].split("rc=0", 1)
    assert "rc=126" in second and "The user denied it" in second, res["output"]
    assert sup.read_text().count("\n") == 1


def test_an_exec_the_commands_text_already_asked_about_is_not_asked_again(ptc, sup):
    (ptc.workdir / "d").mkdir()
    cfg = ptc.write_config("policy:\n  headless: deny\n")
    script = ptc.path("rm.py")
    script.write_text("from hermes_tools import terminal\n"
                      "print(terminal('rm -r d')['exit_code'])\n")
    t = Pty(ptc, ["run", "--config", str(cfg), str(script)])
    t.expect("Allow?")
    t.send("o\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["output"].strip() == "0", (res, err)
    assert b"Allow?" not in t.seen  # asked once, by the text check
    assert not (ptc.workdir / "d").exists()


THREADED_EXEC = ("python3 -c 'import threading, os, time; "
                 "threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); "
                 "os.execv(\"/bin/echo\", [\"echo\", \"exec-ran\"])'")


def test_an_exec_from_a_multi_threaded_process_is_judged_on_what_was_read(ptc, sup):
    # The default (policy.threaded_exec: allow): judged on the argv ptc read, so a threaded
    # program (cargo, go, Python with threads) still starts programs under a terminal rule.
    cfg = ptc.write_config(DENY)
    res = tool(ptc, THREADED_EXEC, "--config", str(cfg))
    assert res["output"].strip() == "exec-ran", res
    # ... and a denied program is still refused when a threaded process asks for it.
    # (argv[0] is one of the spellings judged.)
    res = tool(ptc, THREADED_EXEC.replace('["echo"', '["ptc-marker"'), "--config",
               str(cfg))
    assert "exec-ran" not in res["output"].splitlines(), res
    assert "no markers" in res["output"], res


def test_threaded_exec_deny_refuses_an_exec_another_thread_could_rewrite(ptc, sup):
    # Another thread could rewrite the path or argv after ptc read them (seccomp_unotify(2)).
    cfg = ptc.write_config(DENY.rstrip(" ") + "      threaded_exec: deny\n", name="t.yaml")
    res = tool(ptc, THREADED_EXEC, "--config", str(cfg))
    assert "exec-ran" not in res["output"].splitlines(), res
    assert "another running thread" in res["output"], res
    # Without terminal rules the built-in lists judge what was read, and it runs.
    res = tool(ptc, THREADED_EXEC)
    assert res["output"].strip() == "exec-ran", res


def test_without_user_notification_the_text_check_stands_and_says_so(ptc):
    ran = setup_scratch(ptc)
    cfg = ptc.write_config(DENY)
    env = {"PTC_TEST_NO_EXEC_NOTIFY": "1"}
    res = tool(ptc, "ptc-marker", "--config", str(cfg), env=env)
    assert res["status"] == "denied" and not ran.exists(), res
    res = tool(ptc, "echo hi", "--config", str(cfg), env=env)
    assert res["output"] == "hi"
    assert len(res["warnings"]) == 1 and "judged the command text only" in res["warnings"][0]
    assert "PTC_TEST_NO_EXEC_NOTIFY" in res["warnings"][0]


def test_doctor_says_how_terminal_rules_are_judged(ptc):
    r = ptc.run_ptc(["doctor"], env={"PTC_TEST_NO_EXEC_NOTIFY": "1"})
    assert "terminal rules: judged on the command text only (PTC_TEST_NO_EXEC_NOTIFY=1" \
        in r.stdout.decode(), r
    if supervised(ptc):
        r = ptc.run_ptc(["doctor"])
        assert "terminal rules: judged on every program a command runs" in r.stdout.decode(), r


from isolation_util import iso_fixture  # noqa: E402
from isolation_util import iso_user, iso_user_binary  # noqa: E402,F401  (pytest fixtures)

iso = iso_fixture("ptcx-exec-")


@pytest.mark.parametrize("terminal", ["default", "strict"])
def test_the_rules_hold_as_root_and_unprivileged_plain_and_strict(iso, terminal):
    """As root a command runs in a pid namespace of its own, unprivileged under an init of
    its own (with NO_NEW_PRIVS), with terminal.isolation strict in the script's sandbox:
    the filter is installed on each path."""
    b = iso.mkdir(iso.workdir / "bin")
    ran = iso.workdir / "ran"
    iso.write(b / "ptc-marker", f'#!/bin/sh\necho "$0 $*" >> {ran}\n', mode=0o755)
    iso.env["PATH"] = f"{b}:{iso.env['PATH']}"
    text = DENY.rstrip(" ") + ("    terminal:\n      isolation: strict\n" if terminal == "strict" else "")
    cfg = iso.own(iso.write_config(text))
    r = iso.run_ptc(["tool", "terminal", '{"command": "{ptc-marker,x}"}'], input=b"")
    assert r.rc == 0, r
    control = json.loads(r.stdout)
    if control.get("warnings") or control.get("status") or not ran.exists():
        pytest.skip(f"not supervised or not run here: {control}")
    ran.unlink()
    for s in ("{ptc-marker,x}", "p=ptc-marker; $p", "bin/p?c-marker", "sh bin/ptc-marker"):
        r = iso.run_ptc(["tool", "--config", str(cfg), "terminal", json.dumps({"command": s})],
                        input=b"")
        assert r.rc == 0, r
        res = json.loads(r.stdout)
        assert not ran.exists(), (s, res)
        assert "[ptc refused to run" in res["output"], (s, res)


INT80_EXEC = r"""
#include <string.h>
#include <sys/mman.h>
int main(void)
{
        char *m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
                       -1, 0);
        unsigned int *argv = (unsigned int *) (m + 128);
        long ret;

        strcpy(m, "/bin/echo");
        strcpy(m + 64, "abi-ran");
        argv[0] = (unsigned int) (unsigned long) m;
        argv[1] = (unsigned int) (unsigned long) (m + 64);
        argv[2] = 0;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(11), "b"(m), "c"(argv), "d"(0) : "memory");
        return 3;
}
"""


def test_an_exec_through_a_foreign_abi_is_refused(ptc, sup):
    """i386's execve through int 0x80 from an x86_64 process: its pointers are 32 bits, which
    ptc does not read; refused, never judged in part."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if os.uname().machine != "x86_64" or not cc:
        pytest.skip("needs x86_64 and a C compiler")
    src = ptc.workdir / "int80.c"
    src.write_text(INT80_EXEC)
    exe = ptc.workdir / "int80"
    subprocess.run([cc, "-O0", "-o", str(exe), str(src)], check=True)
    res = tool(ptc, "./int80; echo rc=$?")
    if "rc=3" not in res["output"] and "abi-ran" in res["output"]:
        pytest.fail(f"the i386 exec ran: {res}")
    assert "foreign system call ABI" in res["output"], res
    # The control: without the supervisor the same exec runs, where the kernel has i386.
    res = tool(ptc, "./int80; echo rc=$?", env={"PTC_TEST_NO_EXEC_NOTIFY": "1"})
    if "abi-ran" not in res["output"]:
        pytest.skip(f"no i386 system calls in this kernel: {res}")


def test_the_rules_hold_on_a_remote_backends_target(ptc, sup):
    """The agent on the target runs terminal commands under its own supervisor."""
    cfg = ptc.write_config(DENY)
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal("{ptc-marker,x}; echo rc=$?")["output"])
        """, "--config", str(cfg), "--backend", "exec:sh", input=b"", cwd=str(ptc.workdir),
        # The target's shell finds `ptc agent` on its PATH (as test_remote.py's do).
        env={"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"})
    expect(r, 0, "success")
    assert not sup.exists(), r
    assert "rc=126" in r.output and "[ptc refused to run" in r.output, r
