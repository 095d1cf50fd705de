# Writes a copy of a generator.py with a time stamp before each step of a drafting round (and the bookkeeping
# between rounds), for stamps_ab.py: python docs/results/round-costs-2026-12-07/make_stamped.py IN.py OUT.py
import sys
src = open(sys.argv[1]).read().split('\n')
marks = [("last[0].observe(last[1]", "A_top"), ("room = target.capacity", "B_observed"), ("copied, n = lookup.continuation", "C_pre_lookup"),
         ("depth = (chooser.choose()", "D_pre_choose"), ("policy = chains.get(depth)", "E_chosen"), ("pairs = joined(pending_tokens)", "F_pre_join"),
         ("acc: Accepted = accept(", "G_verified"), ("tree_depth = ", "H_accepted"), ("depth_drafted = ", "H_accepted"), ("proposer.observe(len(acc.path)", "H2_depth"), ("commit(target, acc)", "I_proposer_observed"),
         ("t3 = time.perf_counter()", "J_committed"), ("s.observe(tree.size", "K_pre_stats"), ("pending_aux, pending_tokens = [", "L_pre_gather"),
         ("yield ", "N_pre_yield")]
out = []; used = set()
fline = next(i for i, l in enumerate(src) if "pairs = joined(pending_tokens)" in l)
for i, line in enumerate(src):
    for pat, name in marks:
        late = name[0] in "GHIJKLN"
        if pat in line and name not in used and (i > fline) == late and not (name == "I_proposer_observed" and line.strip() != "commit(target, acc)"):
            ind = len(line) - len(line.lstrip()); out.append(" " * ind + f"_STAMP({name!r})"); used.add(name); break
    out.append(line)
s = "\n".join(out).replace("import numpy as np\n", "import numpy as np\nimport time as _t\nSTAMPS = []\ndef _STAMP(k): STAMPS.append((k, _t.perf_counter()))\n", 1)
open(sys.argv[2], 'w').write(s)
print(sorted(used))
