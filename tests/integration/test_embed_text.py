# SPDX-License-Identifier: MIT
"""scripts/embed-text.py, which the build runs to compile Python files in as C strings
(src/core/exec/interp.py as exec_interp_source, src/core/stubs/module-body.py as
stubs_module_body): the string a C compiler makes of its output is the input, byte for byte,
whatever the bytes (but NUL, which fails with a message), and the files it embeds are
Python that compiles."""

import random
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "embed-text.py"
EMBEDDED = [REPO_ROOT / "src" / "core" / "exec" / "interp.py",
            REPO_ROOT / "src" / "core" / "stubs" / "module-body.py"]
DUMP = r"""
#include <stdio.h>
#include <string.h>
#include "x/text.h"
int main(void) { fwrite(text, 1, strlen(text), stdout); return 0; }
"""


def embed(tmp_path, data):
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    out = tmp_path / "text.c"
    r = subprocess.run([sys.executable, str(SCRIPT), str(src), str(out), "text", "x/text.h"],
                       capture_output=True, text=True, timeout=60)
    return r, out


def compiled(tmp_path, c_file):
    """The string the compiler makes of c_file's `text`, read back by a program."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "x").mkdir(exist_ok=True)
    (tmp_path / "x" / "text.h").write_text("extern const char text[];\n")
    (tmp_path / "dump.c").write_text(DUMP)
    exe = tmp_path / "dump"
    r = subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path),
                        "-o", str(exe), str(tmp_path / "dump.c"), str(c_file)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return subprocess.run([str(exe)], capture_output=True, timeout=60, check=True).stdout


RNG = random.Random(36)
CASES = {
    "empty": b"",
    "no final newline": b"x = 1",
    "quotes and backslashes": b'print("a\\"b")\\\n"""\\"""\n\\',
    "trigraphs": b"??/\n??=??(??)\n?",
    "octal escape then digit": b"\x01" + b"7" + b"\x7f" + b"0\n",
    "non-ASCII and controls": "é ✓ 🐍\r\n\t\x0b\x0c\x1b[0m\n".encode() + b"\xff\xfe\x80",
    "a long line": b"a" * 10000 + b"\\" * 3000 + b"\n",
    "every byte but NUL": bytes(range(1, 256)) * 4,
    "random": bytes(RNG.randrange(1, 256) for _ in range(50000)),
}


@pytest.mark.parametrize("name", CASES)
def test_the_compiled_string_is_the_input_byte_for_byte(tmp_path, name):
    data = CASES[name]
    r, out = embed(tmp_path, data)
    assert r.returncode == 0, r.stderr
    out.read_text(encoding="ascii")  # the generated C is plain ASCII
    assert compiled(tmp_path, out) == data, name


@pytest.mark.parametrize("path", EMBEDDED, ids=lambda p: p.name)
def test_the_embedded_files_round_trip(tmp_path, path):
    data = path.read_bytes()
    r, out = embed(tmp_path, data)
    assert r.returncode == 0, r.stderr
    assert compiled(tmp_path, out) == data


def test_a_nul_byte_fails_with_its_offset_and_no_output(tmp_path):
    r, out = embed(tmp_path, b"abc\0def")
    assert r.returncode == 1
    assert "NUL byte at offset 3" in r.stderr, r.stderr
    assert not out.exists()
    assert not list(tmp_path.glob("text.c*"))


def test_a_missing_input_fails_with_a_message(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.py"),
                        str(tmp_path / "out.c"), "text", "x/text.h"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "none.py" in r.stderr and "No such file" in r.stderr, r.stderr
    assert not (tmp_path / "out.c").exists()


@pytest.mark.parametrize("path", EMBEDDED, ids=lambda p: p.name)
def test_the_embedded_files_are_python_that_compiles(path):
    compile(path.read_bytes(), str(path), "exec")
