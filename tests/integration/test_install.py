# SPDX-License-Identifier: MIT
"""What `meson install` delivers (docs/install.md), from the build directory under test.

The build dir is the one holding $PTC_BIN. `meson install --destdir` stages it in a
scratch directory once for the module; then every file docs/install.md lists must be
there (the binary, the libptc.so chain, libptc.a, the headers, ptc.pc, the man pages,
the completions, the docs) and nothing else, in particular no test program. A small C
host is built against the *installed* tree exactly as docs/install.md prints it
(`cc -o host host.c $(pkg-config --cflags --libs ptc)`, pkg-config pointed at the staged
tree) and run with the staged libdir: a host tool, a script calling it, the result checked.
The ABI check (scripts/abi-check.sh) runs against the committed baseline too.
The web module ptc-web.so lands in <libdir>/ptc, the only installed file linking libcurl and
gumbo; the staged ptc and libptc.so each find it there (not in the configured prefix,
which the staging leaves empty) and fetch a page from a local server with web_extract.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import REPO_ROOT, ptc_binary

BUILD = ptc_binary().parent
TIMEOUT = 600


def meson_info(kind):
    p = subprocess.run(["meson", "introspect", f"--{kind}", str(BUILD)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(destdir, {option: directory}) after `meson install --destdir` of the build under test."""
    if not (BUILD / "meson-info").is_dir() or not shutil.which("meson"):
        pytest.skip(f"{BUILD} is not a meson build directory (PTC_BIN={ptc_binary()})")
    dest = tmp_path_factory.mktemp("destdir")
    p = subprocess.run(["meson", "install", "-C", str(BUILD), "--destdir", str(dest), "--quiet"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"meson install failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    opts = {o["name"]: o["value"] for o in meson_info("buildoptions")}
    prefix = Path(opts["prefix"])
    dirs = {k: prefix / opts[k] for k in ("bindir", "libdir", "includedir", "mandir",
                                          "datadir")}
    return dest, {k: Path(str(dest) + str(v)) for k, v in dirs.items()}


def build_option(name):
    return {o["name"]: o["value"] for o in meson_info("buildoptions")}[name]


def project_version():
    return meson_info("projectinfo")["version"]


def expected_files(d):
    v = project_version()
    docs = [d["datadir"] / "doc/ptc" / n for n in ("README.md", "CHANGELOG.md", "SECURITY.md")]
    docs += [d["datadir"] / "doc/ptc/docs" / p.name for p in (REPO_ROOT / "docs").iterdir()
             if p.suffix in (".md", ".json")]
    headers = [d["includedir"] / "ptc" / p.name for p in (REPO_ROOT / "include/ptc").glob("*.h")]
    # The static agent is built where every static archive is installed and no sanitizer
    # is on (meson.build): then it and its SHA-256 are installed beside ptc-web.so.
    agent = [d["libdir"] / "ptc" / n for n in ("ptc-agent", "ptc-agent.sha256")] \
        if (BUILD / "ptc-agent").exists() else []
    return set([
        d["bindir"] / "ptc",
        d["libdir"] / "libptc.so",
        d["libdir"] / "libptc.so.0",
        d["libdir"] / f"libptc.so.{v}",
        d["libdir"] / "libptc.a",
        d["libdir"] / "ptc/ptc-web.so",
        d["libdir"] / "pkgconfig/ptc.pc",
        d["mandir"] / "man1/ptc.1",
        d["mandir"] / "man5/ptc-config.5",
        d["mandir"] / "man3/libptc.3",
        d["datadir"] / "bash-completion/completions/ptc",
        d["datadir"] / "zsh/site-functions/_ptc",
    ] + docs + headers + agent)


def test_every_file_is_where_it_belongs_and_nothing_else(installed):
    dest, d = installed
    have = {p for p in dest.rglob("*") if p.is_file() or p.is_symlink()}
    want = expected_files(d)
    assert have == want, (f"missing: {sorted(map(str, want - have))}\n"
                          f"unexpected: {sorted(map(str, have - want))}")
    names = {p.name for p in have}
    assert not [n for n in names if re.match(r"(test-|fuzz-|libptc-fault)", n)], names


def test_the_library_chain_and_its_exports(installed):
    _, d = installed
    v = project_version()
    lib = d["libdir"]
    assert os.readlink(lib / "libptc.so") == "libptc.so.0"
    assert os.readlink(lib / "libptc.so.0") == f"libptc.so.{v}"
    real = lib / f"libptc.so.{v}"
    assert real.is_file() and not real.is_symlink()
    p = subprocess.run(["readelf", "--dyn-syms", "-d", "-W", str(real)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert re.search(r"SONAME.*\[libptc\.so\.0\]", p.stdout), p.stdout[:2000]
    exported = set(re.findall(r"\bGLOBAL\s+DEFAULT\s+\d+\s+(\w+)@@PTC_0\b", p.stdout))
    header = (REPO_ROOT / "include/ptc/ptc.h").read_text(encoding="utf-8")
    api = set(re.findall(r"PTC_EXPORT[^;]*?\b(ptc_\w+)\(", header))
    assert api and exported == api, (f"not exported: {sorted(api - exported)}; "
                                     f"exported beyond the API: {sorted(exported - api)}")


def test_headers_and_man_pages_are_the_sources(installed):
    _, d = installed
    for h in (REPO_ROOT / "include/ptc").glob("*.h"):
        assert (d["includedir"] / "ptc" / h.name).read_bytes() == h.read_bytes()
    for page, sec in (("ptc.1", "man1"), ("ptc-config.5", "man5"), ("libptc.3", "man3")):
        assert (d["mandir"] / sec / page).read_bytes() == (REPO_ROOT / "man" / page).read_bytes()
    assert os.access(d["bindir"] / "ptc", os.X_OK)


def pkg_env(dest, d):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKG_CONFIG")}
    env["PKG_CONFIG_PATH"] = str(d["libdir"] / "pkgconfig")
    env["PKG_CONFIG_SYSROOT_DIR"] = str(dest)
    return env


def pkg_config(dest, d, *args):
    p = subprocess.run(["pkg-config", *args, "ptc"], capture_output=True, text=True,
                       env=pkg_env(dest, d), timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_pkg_config_file(installed):
    dest, d = installed
    assert pkg_config(dest, d, "--modversion") == [project_version()]
    cflags = pkg_config(dest, d, "--cflags")
    assert f"-I{d['includedir']}" in cflags, cflags
    libs = pkg_config(dest, d, "--libs")
    assert f"-L{d['libdir']}" in libs and "-lptc" in libs, libs
    # the static library's own dependencies come only with --static
    static = pkg_config(dest, d, "--static", "--libs")
    for lib in ("-ljansson", "-lyaml", "-lpcre2-8", "-lseccomp"):
        assert lib in static and lib not in libs, (lib, static, libs)
    # libcurl, gumbo and libidn2 are ptc-web.so's, loaded at run time: libptc.a does not need them
    for lib in ("-lcurl", "-lgumbo", "-lidn2"):
        assert lib not in static, (lib, static)
    pc = (d["libdir"] / "pkgconfig/ptc.pc").read_text()
    assert re.search(r"^Requires.private: .*jansson", pc, re.M), pc
    assert re.search(r"^Name: ptc$", pc, re.M) and re.search(r"^Description: \S", pc, re.M), pc


def docs_compile_line():
    """The line of docs/install.md that builds a C host: the test runs it as printed."""
    text = (REPO_ROOT / "docs/install.md").read_text(encoding="utf-8")
    lines = [l for l in text.splitlines() if l.startswith("cc ") and "pkg-config" in l]
    assert len(lines) == 1, lines
    return lines[0]


def host_source():
    # The test's own host, whose output it knows (examples/host.c is built and run by the
    # meson test 'example-host' against the build tree).
    return REPO_ROOT / "tests/install/host.c"


def test_a_c_host_builds_and_runs_against_the_installed_library(installed, tmp_path):
    if not shutil.which("pkg-config") or not shutil.which("cc"):
        pytest.skip("pkg-config or cc is not installed (.ci/run installs both)")
    dest, d = installed
    work = tmp_path / "host"
    work.mkdir()
    shutil.copy(host_source(), work / "host.c")
    # the host's include must come from the installed tree, not from the source tree
    line = docs_compile_line()
    sanitize = build_option("b_sanitize")
    if sanitize != "none":
        # A sanitized libptc (scripts/run-tests.sh --asan, clang) needs its runtime in the host.
        line = re.sub(r"^cc ", f"clang -fsanitize={sanitize} ", line)
    p = subprocess.run(["bash", "-c", line], cwd=str(work), capture_output=True,
                       text=True, env=pkg_env(dest, d), timeout=TIMEOUT)
    assert p.returncode == 0, f"{line}\n{p.stdout}\n{p.stderr}"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path), "LD_LIBRARY_PATH": str(d["libdir"])}
    p = subprocess.run(["ldd", str(work / "host")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert f"libptc.so.0 => {d['libdir']}/libptc.so.0" in p.stdout, p.stdout
    p = subprocess.run([str(work / "host")], capture_output=True, text=True, env=env,
                       cwd=str(work), timeout=120)
    assert p.returncode == 0, f"host failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    out = p.stdout.splitlines()
    assert out[0] == f"libptc {project_version()}", out
    assert out[1] == "status success", out
    result = json.loads("\n".join(out[2:]))
    assert result["status"] == "success", result
    assert result["output"] == "sum is 42\n", result
    assert result["tool_calls_made"] == 1, result


def test_abi_matches_the_baseline():
    """scripts/abi-check.sh: the built library against abi/libptc.abi."""
    if not (BUILD / "libptc.so.0").exists():
        pytest.skip(f"no libptc.so.0 in {BUILD}")
    if build_option("b_sanitize") != "none" or not build_option("debug"):
        # abidw reads the types from DWARF; a sanitizer build is checked by its gcc twin.
        pytest.skip("the ABI check needs a debug build without sanitizers (scripts/run-tests.sh)")
    p = subprocess.run([str(REPO_ROOT / "scripts/abi-check.sh"), str(BUILD)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode == 77:
        pytest.skip("abigail-tools (abidiff) is not installed; .ci/run installs it")
    assert p.returncode == 0, f"{p.stdout[-4000:]}\n{p.stderr[-2000:]}"


def test_abi_check_fails_on_a_removed_function(tmp_path):
    """The check is not a rubber stamp: a baseline with a function the library lacks
    (ptc_free renamed) is an incompatible change."""
    if not (BUILD / "libptc.so.0").exists():
        pytest.skip(f"no libptc.so.0 in {BUILD}")
    if not shutil.which("abidiff"):
        pytest.skip("abigail-tools (abidiff) is not installed; .ci/run installs it")
    text = (REPO_ROOT / "abi/libptc.abi").read_text(encoding="utf-8")
    assert "'ptc_free'" in text
    doctored = tmp_path / "gone.abi"
    doctored.write_text(text.replace("'ptc_free'", "'ptc_gone'")
                        .replace("ptc_free@@PTC_0", "ptc_gone@@PTC_0"), encoding="utf-8")
    p = subprocess.run([str(REPO_ROOT / "scripts/abi-check.sh"), str(BUILD)],
                       capture_output=True, text=True, timeout=TIMEOUT,
                       env={**os.environ, "PTC_ABI_BASELINE": str(doctored)})
    assert p.returncode == 1 and "INCOMPATIBLE" in p.stderr, p
    assert "ptc_gone" in p.stdout, p.stdout


def test_a_c_host_links_the_installed_static_library(installed, tmp_path):
    """libptc.a with what ptc.pc names for it (Requires.private, Libs.private) is enough:
    the host links and runs without libptc.so. The required packages are linked as shared
    libraries: Debian ships no static closure of libcurl's own dependencies."""
    if not shutil.which("pkg-config") or not shutil.which("cc"):
        pytest.skip("pkg-config or cc is not installed (.ci/run installs both)")
    if build_option("b_sanitize") != "none":
        pytest.skip("a sanitized libptc.a needs the sanitizer runtime; the gcc build checks this")
    dest, d = installed
    work = tmp_path / "host"
    work.mkdir()
    shutil.copy(host_source(), work / "host.c")
    requires = [r.split()[0] for r in subprocess.run(
        ["pkg-config", "--print-requires-private", "ptc"], capture_output=True, text=True,
        env=pkg_env(dest, d), timeout=60, check=True).stdout.splitlines() if r.strip()]
    pc = (d["libdir"] / "pkgconfig/ptc.pc").read_text()
    private = re.search(r"^Libs.private: (.*)$", pc, re.M).group(1).split()
    deps = subprocess.run(["pkg-config", "--libs", *requires], capture_output=True, text=True,
                          timeout=60, check=True).stdout.split()
    libs = [str(d["libdir"] / "libptc.a"), *deps, *private]
    argv = ["cc", "-o", "host", "host.c", *pkg_config(dest, d, "--cflags"), *libs]
    p = subprocess.run(argv, cwd=str(work), capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"{argv}\n{p.stderr[-4000:]}"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path)}
    p = subprocess.run(["ldd", str(work / "host")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert "libptc" not in p.stdout, p.stdout
    p = subprocess.run([str(work / "host")], capture_output=True, text=True, env=env,
                       cwd=str(work), timeout=120)
    assert p.returncode == 0, f"host failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    assert json.loads("\n".join(p.stdout.splitlines()[2:]))["output"] == "sum is 42\n"


def needed(path):
    p = subprocess.run(["readelf", "-d", "-W", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return re.findall(r"\(NEEDED\).*\[(.+)\]", p.stdout)


def test_only_the_web_module_links_libcurl_gumbo_and_libidn2(installed):
    _, d = installed
    web = re.compile(r"lib(curl|gumbo|idn2)\.")
    for obj in (d["bindir"] / "ptc", d["libdir"] / f"libptc.so.{project_version()}"):
        assert not [n for n in needed(obj) if web.match(n)], (obj, needed(obj))
    mod = needed(d["libdir"] / "ptc/ptc-web.so")
    for lib in ("libcurl.", "libgumbo.", "libidn2."):
        assert any(n.startswith(lib) for n in mod), (lib, mod)


PAGE = (b"<html><head><title>Staged page</title></head>"
        b"<body><h1>Hello</h1><p>served to the staged tree</p></body></html>")


class PageHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture
def page_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/page"
    finally:
        srv.shutdown()
        srv.server_close()


def configured_module():
    """Where the build would look last: the configured install dir (empty when staged)."""
    return Path(build_option("prefix")) / build_option("libdir") / "ptc/ptc-web.so"


def check_page(result):
    entry = result["results"][0]
    assert entry["error"] is None and entry["title"] == "Staged page", result
    assert "served to the staged tree" in entry["content"], result


def test_the_installed_ptc_finds_its_web_module(installed, tmp_path, page_url):
    if configured_module().exists():
        pytest.skip(f"{configured_module()} exists: the staged lookup would not be proven")
    _, d = installed
    cfg = tmp_path / "config.yaml"
    cfg.write_text("web:\n  allow_private_urls: true\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path)}
    ptc = str(d["bindir"] / "ptc")
    p = subprocess.run([ptc, "doctor", "--config", str(cfg)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p
    assert "  web_extract  builtin (libcurl + gumbo;" in p.stdout, p.stdout
    p = subprocess.run([ptc, "tool", "--config", str(cfg), "web_extract",
                        json.dumps({"urls": [page_url]})], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p
    check_page(json.loads(p.stdout))


def test_the_installed_library_finds_its_web_module(installed, tmp_path, page_url):
    """A Python host over the staged libptc.so.0: web_extract works, and the module mapped is
    the staged <libdir>/ptc/ptc-web.so."""
    if configured_module().exists():
        pytest.skip(f"{configured_module()} exists: the staged lookup would not be proven")
    if build_option("b_sanitize") != "none":
        pytest.skip("a sanitized libptc needs its runtime preloaded; the gcc build checks this")
    _, d = installed
    script = textwrap.dedent("""
        import json, sys
        import ptc
        with ptc.Engine(no_config_file=True) as e:
            e.set("web.allow_private_urls", "true")
            e.start()
            print(json.dumps(e.call_tool("web_extract", urls=[sys.argv[1]])))
        maps = open("/proc/self/maps").read()
        print(sorted({l.split()[-1] for l in maps.splitlines() if "ptc-web.so" in l}))
    """)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT / "python"),
           "PTC_LIBRARY": str(d["libdir"] / "libptc.so.0")}
    p = subprocess.run([sys.executable, "-c", script, page_url], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p
    out = p.stdout.splitlines()
    check_page(json.loads(out[0]))
    assert out[1] == repr([str(d["libdir"] / "ptc/ptc-web.so")]), out
