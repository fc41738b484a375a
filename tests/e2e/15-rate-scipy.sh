# ttaudit's exact statistics (base/rate.c through `ttaudit plan`) against
# SciPy's, computed independently here: Clopper-Pearson and Wilson intervals
# of 60 random counts plus the edge cases, Fisher's exact test of 40 random
# 2x2 tables, and the sample sizes of the seeds' question.
. tests/e2e/lib.sh
"$PYTHON" -c 'import scipy.stats' 2>/dev/null || fail "SciPy (python3-scipy) is needed; scripts/deps.sh installs it"
"$PYTHON" - "$TTAUDIT" <<'PY'
import json, random, subprocess, sys
from scipy.stats import beta, binomtest, fisher_exact, binom, hypergeom
tt = sys.argv[1]
rnd = random.Random(7)
obs = [(0, 192), (1, 32), (15, 77), (0, 1), (5, 5), (1, 1), (0, 100000)]
obs += [(k, n) for n in (rnd.randint(1, 5000) for _ in range(60)) for k in [rnd.randint(0, n)]]
tables = [(15, 77, 0, 78), (3, 10, 7, 10), (0, 5, 0, 5)]
for _ in range(40):
    n1, n2 = rnd.randint(1, 400), rnd.randint(1, 400)
    tables.append((rnd.randint(0, n1), n1, rnd.randint(0, n2), n2))
args = [tt, "plan", "--json"]
out = {"observed": [], "compare": []}
# --observed and --compare repeat up to 64 times per call
for chunk in [obs[i:i + 60] for i in range(0, len(obs), 60)]:
    a = args + [x for k, n in chunk for x in ("--observed", f"{k}/{n}")]
    out["observed"] += json.loads(subprocess.run(a, check=True, capture_output=True).stdout)["observed"]
for chunk in [tables[i:i + 60] for i in range(0, len(tables), 60)]:
    a = args + [x for t in chunk for x in ("--compare", f"{t[0]}/{t[1]},{t[2]}/{t[3]}")]
    out["compare"] += json.loads(subprocess.run(a, check=True, capture_output=True).stdout)["compare"]
bad = 0
def close(got, want, what, rel=1e-7):
    global bad
    if abs(got - want) > rel * abs(want) + 1e-13:
        print(f"{what}: ttaudit {got!r}, scipy {want!r}")
        bad += 1
for (k, n), o in zip(obs, out["observed"]):
    assert (o["k"], o["n"]) == (k, n)
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    w = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    close(o["cp_lo"], lo, f"clopper-pearson lo {k}/{n}")
    close(o["cp_hi"], hi, f"clopper-pearson hi {k}/{n}")
    close(o["wilson_lo"], max(w.low, 0.0), f"wilson lo {k}/{n}", 1e-6)
    close(o["wilson_hi"], min(w.high, 1.0), f"wilson hi {k}/{n}", 1e-6)
for t, o in zip(tables, out["compare"]):
    p = fisher_exact([[t[0], t[1] - t[0]], [t[2], t[3] - t[2]]])[1]
    close(o["fisher_p"], min(p, 1.0), f"fisher {t}", 1e-6)
# the seeds' question: 0.48% per request, the guard makes it zero
plan = json.loads(subprocess.run([tt, "plan", "--baseline", "0.0048", "--runs", "192", "--json"],
                                 check=True, capture_output=True).stdout)
n = plan["n_to_bound"]
if not ((1 - 0.0048) ** n <= 0.025 < (1 - 0.0048) ** (n - 1)):
    print("n_to_bound", n, "is not the smallest n with (1 - p)^n <= 0.025"); bad += 1
close(plan["run"]["p_zero_at_baseline"], binom.pmf(0, 192, 0.0048), "p(0 of 192)")
close(plan["run"]["zero_rules_out_above"], beta.ppf(0.975, 1, 192), "0 of 192 upper bound")
# power of the two-arm plan, by an independent double sum with SciPy
def power(p0, p1, m, a):
    tot = 0.0
    for k2 in range(0, 60):
        w2 = binom.pmf(k2, m, p1)
        if w2 < 1e-14:
            continue
        for k1 in range(0, 80):
            w1 = binom.pmf(k1, m, p0)
            if w1 >= 1e-14 and hypergeom.sf(k1 - 1, 2 * m, k1 + k2, m) <= a:
                tot += w1 * w2
    return tot
m = plan["n_per_arm_to_detect"]
if not (power(0.0048, 0, m, 0.025) >= 0.8 > power(0.0048, 0, m - 1, 0.025)):
    print("n_per_arm_to_detect", m, "power", power(0.0048, 0, m, 0.025), power(0.0048, 0, m - 1, 0.025)); bad += 1
print(f"{len(obs)} intervals, {len(tables)} tables, plan n_to_bound {n}, per arm {m}: {bad} mismatches")
sys.exit(1 if bad else 0)
PY
