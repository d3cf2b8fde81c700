# SPDX-License-Identifier: MIT
"""The web module (src/core/web/web-module.h): ptc-web.so holds everything that needs
libcurl or gumbo and is loaded on the first web tool call. Without it (the binary copied
where no module is), or with one that does not load, or one of another ptc build, the web
tools answer with an error naming the path and the reason, `ptc doctor` says so on its web
lines, and nothing else of ptc changes. The build tree's own binary loads build/ptc-web.so
(the web tests, test_web_extract.py and test_web_search.py, run on it), and the installed
tree finds its own (test_install.py).
"""

import json
import re
import shutil
import subprocess

import pytest

from conftest import expect

UNAVAILABLE = "web tools unavailable: "


def lone_binary(ptc):
    """build/ptc copied to a directory of its own: no ptc-web.so beside it."""
    d = ptc.path("lone")
    d.mkdir()
    shutil.copy(ptc.bin, d / "ptc")
    ptc.bin = d / "ptc"
    return d


def doctor_web(ptc, *args):
    r = ptc.run_ptc(["doctor", *args])
    assert r.rc == 0, r
    out = r.stdout.decode()
    return out[out.index("web:\n"):out.index("supervision:")]


def tool(ptc, name, args, *opts, env=None):
    r = ptc.run_ptc(["tool", *opts, name, json.dumps(args)], env=env)
    assert r.rc == 0, r
    return json.loads(r.stdout)


def skip_if_installed_module_found(web_lines):
    if "web_extract  builtin" in web_lines:
        pytest.skip("an installed ptc-web.so was found by the lone binary: " + web_lines)


def test_without_the_module_web_tools_say_why_and_the_rest_works(ptc):
    d = lone_binary(ptc)
    web = doctor_web(ptc)
    skip_if_installed_module_found(web)
    m = re.search(r"^  web_extract  (web tools unavailable: ptc-web.so not found in (.*))$",
                  web, re.M)
    assert m, web
    message, tried = m.group(1), m.group(2).split(", ")
    assert tried[0] == str(d), tried

    # web_extract through a script, as a model would call it
    r = ptc.run("import json\nfrom hermes_tools import web_extract\n"
                "print(json.dumps(web_extract(['http://127.0.0.1:9/x'])))\n",
                "--tools", "web_extract")
    expect(r, 0, "success")
    assert r.output_json() == {"success": False, "error": message}, r

    # web_search with a provider configured: the provider is named, then why it cannot run
    env = {"SEARXNG_URL": "http://127.0.0.1:9"}
    assert tool(ptc, "web_search", {"query": "q"}, env=env) == {"success": False,
                                                                "error": message}
    assert f"  web_search   SearXNG: {message}\n" in doctor_web_env(ptc, env)

    # everything else is the same
    r = ptc.run("print(1 + 1)")
    expect(r, 0, "success")
    assert r.output == "2\n", r
    (ptc.workdir / "f.txt").write_text("hello\n")
    assert "hello" in tool(ptc, "read_file", {"path": "f.txt"})["content"]


def doctor_web_env(ptc, env):
    r = ptc.run_ptc(["doctor"], env=env)
    assert r.rc == 0, r
    return r.stdout.decode()


def test_a_module_that_does_not_load_is_named_with_the_loader_error(ptc):
    d = lone_binary(ptc)
    (d / "ptc-web.so").write_bytes(b"not an ELF object\n")
    res = tool(ptc, "web_extract", {"urls": ["http://127.0.0.1:9/x"]})
    prefix = f"{UNAVAILABLE}cannot load {d}/ptc-web.so: "
    assert res["success"] is False and res["error"].startswith(prefix), res
    assert len(res["error"]) > len(prefix), res  # dlerror()'s text follows
    assert f"  web_extract  {res['error']}\n" in doctor_web(ptc)


def test_a_module_of_another_build_is_refused(ptc):
    if not shutil.which("cc"):
        pytest.skip("no C compiler to build a foreign module")
    d = lone_binary(ptc)
    src = ptc.path("other.c")
    # the leading fields of every struct web_module layout: size, then version
    src.write_text('#include <stddef.h>\n'
                   'const struct { size_t size; const char *version; } ptc_web_module_v1 =\n'
                   '        { 2 * sizeof(size_t), "0.0.1-elsewhere" };\n')
    p = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "ptc-web.so"), str(src)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    version = ptc.run_ptc(["--version"]).stdout.decode().split()[-1]
    res = tool(ptc, "web_extract", {"urls": ["http://127.0.0.1:9/x"]})
    assert res == {"success": False,
                   "error": f"{UNAVAILABLE}{d}/ptc-web.so is from ptc 0.0.1-elsewhere, "
                            f"this is ptc {version}"}, res
