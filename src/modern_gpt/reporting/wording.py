"""The report's prose: every paragraph-long text, a named template filled with str.format. The logic (pages.py,
findings.py, extra_sections.py, scale.py) decides what to say and computes the figures; the words live here, so a
rewording touches nothing else."""

# ------------------------------------------------------------------------------------- the ablation table

TITLE = "# Ablation: from the Step 1 GPT to the modern design"
INTRO = ("Written by `dvc repro` (stage `report`); do not edit by hand. Each row adds one change to the row above "
         "it, at the same shape, on the same seeds and batches.")
LOOKS = ("**Looks.** Each comparison is judged at {looks} seeds, looks fixed in advance (params.yaml `settle:`), and "
         "stops at the first look that settles it (better, worse, or no effect larger than the spread); an open one "
         "(borderline, or not shown either way) gets the next look's seeds on both sides (`modern-gpt settle`), and "
         "at the cap, {cap} seeds, stays open with the effect it rules out. Every look's interval is at {level}, "
         "not {confidence}: a repeated confidence interval, its level calibrated by simulating the whole procedure "
         "so that an effect as large as the spread is called no effect larger than the spread no more often than one "
         "look at {first} seeds and {confidence} would (docs/statistics.md, \"Settling an open verdict\"). A settled "
         "comparison is final, judged on the seeds it had then{seeds} The spread is re-estimated at each look from "
         "the seeds judged there.")
LOOKS_SEEDS = ("; the seeds column says how many seeds each row's mean and sd use, which can be more than a "
               "comparison judged (a row between two comparisons gains seeds for the open one).")
TABLE_NOTE = (
    "Losses are mean ± sd over seeds, in nats per token on fixed validation windows; bpc is bits per character "
    "of the validation text. Δ val is the mean of the per-seed differences from the row above (negative is "
    "better); range is the larger of the two rows' seed ranges (max − min), shown but not judged; spread is "
    "{spread_sds:g} × the pooled seed sd of the two rows, what three seeds of one row typically span: the same "
    "threshold however many seeds run, so more seeds sharpen a verdict. The margins say by how much |Δ val| "
    "clears the spread, and the interval's nearer end clears zero (negative: misses); a verdict needs both "
    "positive. The band is {band_sds:g} × the pooled seed sd of the two rows: a row whose smaller margin "
    "lies within it reads **borderline**, because the same runs on another machine (whose rounding differs) "
    "could tip it either way (docs/statistics.md: \"Verdicts another machine reproduces\"). A noise row says which kind it "
    "is: **{no_effect}** when the {equivalence} interval of Δ val lies inside ± the spread "
    "(whatever the change does, it is smaller than the seeds' own scatter), **{not_shown}** when the seeds "
    "can show neither that nor a change; a row of the second kind, and a borderline row, says about how many "
    "seeds would settle its effect as a change, or that none would.¹")
PARAMS_NOTE = ("params counts every weight, a tied token matrix once; Δ params is against the row above, and ≠ marks "
               "a row whose non-embedding parameters (all but the token table, an untied output head and the "
               "position table) differ from that row's by more than {tolerance:.0%}.")
FULL_MODEL = ("**Full model against the baseline:** Δ val {effect} (spread {spread}, range {range}, {confidence} "
              "CI {interval}): {verdict}; params {params_from} → {params_to}.")

BEYOND_TITLE = "# Beyond the book: the changes models made after it"
BEYOND_INTRO = ("Written by `dvc repro` (stage `report`) when params.yaml's `beyond.ladder` lists flags; do not edit "
                "by hand. Row 0 is the book's design, the last row of `reports/ablation.md`, on the same runs; each "
                "row below switches one more setting on top of the row above it, at the same shape, on the same "
                "seeds and batches, judged by the same rule.")
BEYOND_FULL = ("**Every change against the book's design:** Δ val {effect} (spread {spread}, range {range}, "
               "{confidence} CI {interval}): {verdict}; params {params_from} → {params_to}.")

CATALOGUE_TITLE = "# The catalogue: each change alone on the book's design, against its paper's claim"
CATALOGUE_INTRO = ("Written by `dvc repro` (stage `report`) when params.yaml's `catalogue.ladder` lists changes; do not "
                   "edit by hand. Row 0 is the book's design, the last row of `reports/ablation.md`, on the same runs; "
                   "each row below is row 0 with one change alone (a star, not a chain), at the same shape, on the "
                   "same seeds and batches, and is compared with row 0 by the same rule. Beside each verdict, the "
                   "claim of the change's paper and what became of it here: four layers and 500 steps, not the "
                   "scale the papers worked at.")
CATALOGUE_STAR = ("**A star.** Each of the {n} rows is compared with row 0 alone, on the seeds both ran, and follows its "
                  "own looks: sharing row 0 leaves each comparison's error rates those of a lone comparison "
                  "(docs/catalogue.md, by simulation). The largest look a comparison here reached is {reached} seeds; "
                  "row 0 ran {row0} (the main table's runs, with the seeds settling gave them for any comparison), and "
                  "a comparison settled earlier is judged on its first seeds only. The comparisons share row 0, so the "
                  "chance that at least one verdict here is wrong is larger than any one's: no count of claims that "
                  "held is given.")
CATALOGUE_NOTE = ("Losses are mean ± sd over a row's seeds (nats per token, fixed validation windows). Δ val is the "
                  "mean per-seed difference from row 0 (negative is better), judged as the main table judges each "
                  "row against the row above: the spread is {spread_sds} × the pooled seed sd, the band "
                  "{band_sds:g} × it. *here*: settled in the claimed direction, **claim holds here**; settled against "
                  "it, **the opposite here**; settled as noise, **no effect larger than ±x here** (x: the far end of "
                  "the interval); open at the cap, **open at the cap (n seeds)**; a claim about speed, memory, long "
                  "context or stability, **not tested here**.¹")

# ------------------------------------------------------------------------------------- the ladder at several sizes

SCALE_TITLE = "# The ladder at several sizes: does each verdict hold?"
SCALE_INTRO = ("Written by `dvc repro` (stage `report`) while params.yaml's `scale.sizes` lists sizes; do not edit by "
               "hand. The main ladder of `reports/ablation.md` trained again at each size on the same seeds and "
               "batches: each change is judged at each size by the main table's rule, then across the sizes. The "
               "size `model:` is params.yaml's own shape, whose runs are the main table's.")
SCALE_MEASURE_FLOOR = (
    "**Measure.** Each change's per-seed effect at each size is d = L(k) − L(k−1), paired by seed as in the main "
    "table, and the verdict at each size is the main table's, on d. Every size approaches the same floor (the "
    "entropy of the process that generated the corpus), so a raw effect must shrink as a larger model's loss "
    "does; across sizes the measure is therefore **r = d / (L(k−1) − floor)**, the share of the row above's loss "
    "above the floor that the change removes (negative) or adds. r is the primary measure of this report: the "
    "trend, the slope and the plot are in r.")
SCALE_MEASURE_RAW = (
    "**Measure.** Each change's per-seed effect at each size is d = L(k) − L(k−1), paired by seed as in the main "
    "table, and the verdict at each size is the main table's, on d. This corpus has no known floor, so the "
    "trend, the slope and the plot use raw d: part of a trend may be the losses shrinking with size.")
SCALE_TREND = (
    "**Trend.** The main table's rule again, spread included, on the per-seed effect at the largest size against "
    "the smallest, paired by seed: settled when it beats the spread and its interval excludes zero. Per decade of "
    "N divides that contrast, and its interval, by log₁₀ of the two sizes' N (the full model's non-embedding "
    "parameters). The middle sizes are shown, not tested.")
SCALE_CAP = ("The sizes stop at {cap} seeds (params.yaml `settle.scale_cap`: their runs cost most), so each look's "
             "interval there is at {level}; the size model: is the main table's ladder on its runs, judged at its own "
             "looks up to {main_cap} seeds, at {main_level}. Each verdict names the look that settled it, so the "
             "seeds it was judged on; the provenance lists the seeds every row ran and each row that ran more.")
SCALE_FULL = "**The full model against the baseline, at every size:** "
SCALE_FULL_SIZE = ("{size} Δ val {effect} (spread {spread}, {confidence} CI {interval}): {verdict}, "
                   "params {params_from} → {params_to}")
TRANSFER_DEFINITIONS = (
    "Each change gets the first of these that applies:\n\n"
    "1. **flips**: settled better at one size and settled worse at another.\n"
    "2. **holds at every size**: the same settled verdict (better, or worse) at every size.\n"
    "3. **appears with size**: the trend is settled away from zero (towards the largest size's effect), and the "
    "largest size is settled while the smallest is noise.\n"
    "4. **fades with size**: the trend is settled toward zero (against the smallest size's effect), and the smallest "
    "size is settled while the largest is noise.\n"
    "5. **noise at every size**: noise at every size, and the trend noise too.\n"
    "6. **open**: anything else. A borderline verdict, at an end or of the trend, is neither settled nor noise: "
    "another machine could tip it, so the change it decides stays open.\n\n"
    "A verdict measured at one size belongs to the change only where it holds; one that appears or fades says the "
    "size decides it (docs/scale.md).")

# ------------------------------------------------------------------------------------- warnings

ONE_SEED = ("**One seed: no verdicts.** A single run per row cannot separate a change from seed noise; "
            "list three or more seeds in params.yaml.")
MEMORISED = ("**Memorised:** {rows}. The loss is below what the text allows (train and val under {below:g} nats per "
             "character{floor}): once the model has memorised its corpus, every delta is noise. Use a larger corpus "
             "or fewer steps.")
MEMORISED_FLOOR = ", or train under the corpus's floor of {floor:.4f}"
OVERFITTING = "**Overfitting:** validation loss ended more than {rise:.0%} above its minimum in {runs}."
UNEQUAL = ("**Unequal parameters** (marked ≠): {rows} differ from the row they are compared with by more than "
           "{tolerance:.0%} in non-embedding parameters, so a capacity change is mixed into the effect. "
           "`ablation.match_params: true` sizes each row's MLP to match.")
DIVERGED = ("**Diverged:** {rows}: non-finite loss. Those seeds are left out of the means and of the paired "
            "comparisons, and counted in the cells.")

# ------------------------------------------------------------------------------------- the quick command's lines

Q_MEMORISED = ("memorised: {rows}: train and val under {below:g} nats per character{floor}, so the model has learned "
               "its text by heart and every Δ is noise.")
Q_MEMORISED_FLOOR = ", or train under the floor of {floor:.2f}, the entropy of the process that generated the text"
Q_OVERFITTING = "overfitting: validation loss ended more than {rise:.0%} above its minimum in {runs}."
Q_GAP = ("val far above train: val is {low:.2f}× to {high:.2f}× train across the rows. The model fits its {chars:,} "
         "training characters better than it generalises, so a Δ val here says more about what each row "
         "memorised than about the change.")
Q_UNEQUAL = ("unequal parameters: {rows} differ from the row above by more than {tolerance:.0%} in non-embedding "
             "parameters, so a capacity change is mixed into the effect.")
Q_DIVERGED = "diverged: {rows}: non-finite loss; those seeds are left out of the means and the comparisons."
Q_ONE_SEED = ("one seed: no verdicts. A single run per row cannot tell a change from seed noise, so read no Δ "
              "above as a finding.")
Q_UNITS = ("units: losses in nats per token (here one token per character), on fixed windows of each split; Δ val "
           "is the row minus the row above: negative is better.")
Q_NEXT_ONE_SEED = ("next: --seeds 3 judges each Δ by the report's rule (better or worse only past the seed spread "
                   "and the t-interval); `modern-gpt repro` runs the DVC pipeline, five seeds on 2 M characters, "
                   "into reports/ablation.md.")
Q_NEXT = ("next: the verdicts above are the report's rule, on this corpus and these seeds; `modern-gpt repro` runs "
          "the DVC pipeline, five seeds on 2 M characters, into reports/ablation.md.")

# ------------------------------------------------------------------------------------- the optional checks

AA = ("The baseline trained again on seeds {seeds}, compared with the baseline on seeds {baseline_seeds} by the "
      "same rule: Δ val {effect}, spread {spread}, range {range}, CI {interval}: {verdict}. ")
AA_OK = "As it must be: the rule calls no difference between two copies of one configuration."
AA_SUSPICIOUS = ("**The rule called a difference between two copies of one configuration: treat every verdict above "
                 "with suspicion (seed noise is larger than the seeds here show).**")
LEAVE_ONE_OUT = (
    "The ladder is cumulative, so a row's effect can depend on the rows before it. Here each change is reverted "
    "alone from the full model and compared with it: **worse** means the change helps in the full model.")
RERUN = (
    "Each row below was trained again on the same seeds and batches with every initial weight multiplied by "
    "(1 + {perturbation:g} × N(0, 1)). That is float32's rounding, the size of the difference another CPU's "
    "or GPU's kernels make, and training amplifies it the same way; so these reruns stand in for a reviewer "
    "who retrains on another machine. A rerun row is compared with the rerun of the row above where that "
    "was rerun too. A settled verdict holds when the rerun's verdict (without the band) is the same; a "
    "borderline one is open by definition.")
RERUN_NOISE = ("**Rerun noise:** one run's val loss moved by {rms} rms (largest {largest}), {ratio} × the rows' "
               "pooled seed sd; row means moved by up to {mean_shift}. {held} of {settled} settled verdicts held"
               "{flipped}")

# ------------------------------------------------------------------------------------- the learning-rate grid

SWEEP = (
    "{rows} trained at each learning rate below (multiples of train.lr {base_lr:g}; min_lr scaled alike), on "
    "seeds {seeds}; the runs at {base_lr:g} are the main table's. A **spike** is an episode in which a step's "
    "training loss rose more than {spike:g} nats above the lowest loss before it (`report.spike_threshold`), "
    "counted after warm-up (the first optimiser steps jump alike in every row at a high rate); a seed **diverged** "
    "when its loss went non-finite, or, after warm-up, more than 10% above the uniform model's{uniform}: the run "
    "stops there and is left out of the mean. A row's **best** rate has the lowest mean val loss among the rates "
    "where no seed diverged.")
SWEEP_UNIFORM = " (ln V = {uniform:.3f})"
PAIR_NONE = "**{row} against {ref} at their best rates:** one of them diverged at every rate; no comparison."
PAIR = ("**{row} at lr {lr:g} against {ref} at lr {ref_lr:g}** (each at its best rate): Δ val {effect} ({figures}): "
        "{verdict}. {same} {stability}")
PAIR_FIGURES = "spread {spread}, range {range}, {confidence} CI {interval}, margins {margins}"
PAIR_CHANGED = "The verdict changes: at lr {base_lr:g} for both it was {verdict}."
PAIR_SAME = "The same verdict as at lr {base_lr:g} for both."
STABILITY_UNTESTED = ("{ref} neither spiked nor diverged at any rate of the grid, so the grid does not test what "
                      "{row} does for stability; widen it to higher rates (`sweep.lr`).")
STABILITY_AT = "At lr {lr}, {ref}: {ref_instability}; {row}: {instability}. {row} {outcome}."
SELECTION_BIAS = (
    "**The best rate is chosen on the seeds that judge it**, which favours it: of {k} equally good rates, the best "
    "mean lies below the others by luck alone by about {bias} nats (E[max of {k} normals] × the seed sd pooled over "
    "every cell of the grid, unstable ones included, / √seeds). A difference at the best rates smaller than that is "
    "not evidence; new seeds at the chosen rates would remove the bias (`dvc exp run -S seeds=...`).")
SELECTION_BIAS_LOOKS = (
    "**The best rate is chosen on the seeds that judge it**, which favours it: of {k} equally good rates, the best "
    "mean lies below the others by luck alone by about {bias} nats (E[max of {k} normals] × the seed sd pooled over "
    "every cell of the grid, unstable ones included, / √seeds). The rates are chosen on the grid's own seeds, its "
    "first look, and fixed there; the comparison at the best rates is judged at the grid's looks ({looks} seeds, "
    "a {level} interval at each: `settle.looks` past the grid's seeds, calibrated as the table's). The seeds a later "
    "look adds (`modern-gpt settle`, where that verdict was open) did not choose the rates, so a verdict settled "
    "later leans less on that luck, though its first seeds still count.")

# ------------------------------------------------------------------------------------- serving

SERVING = (
    "Generating keeps every past token's keys and values (the KV cache) for each layer, for the K/V heads only: "
    "grouped-query attention's benefit lives here, not in the loss. Bytes per token = 2 (K and V) × layers × K/V "
    "heads × head size × 4 (float32), computed from each row's shape and checked against the real cache tensor's "
    "size. Sequences that fit: (the budget − one copy of the weights) ÷ one full-context sequence's cache "
    "(`report.serving_budget_gib`).")
SERVING_WINDOW = (
    "A sliding-window layer keeps only its window's tokens (a ring buffer: the newest token takes the oldest's "
    "slot), so per sequence it holds min(context, window) tokens where a full layer holds the context; the cache "
    "tensor column is the bytes of the tensors generation really allocates.")
SERVING_SAVING = ("**{row}** keeps {ratio:.2f}× the KV cache of the row above ({shape_above} → {shape}), "
                  "so {fit_above:,} → {fit:,} full-context sequences fit in {budget:g} GiB; decode speed "
                  "{decode_above:,.0f} → {decode:,.0f} tokens/s.")
SERVING_MEASURED = (
    "† Measured by the serve stage on each row's seed-{seed} model: median of {repeats} runs, {batch} sequences at "
    "once, a {prompt}-token prompt (prefill) then {new} tokens one at a time with the cache (decode), greedy; on "
    "{machines}. They depend on the machine, like the seconds column.")
SAMPLES = (
    "Each row's seed-{seed} model continues the first {prompt} tokens of the validation text, sampled at "
    "temperature {temperature:g} among the {top_k} likeliest tokens (sampler seed {sampler_seed}), up to the "
    "context of {context} tokens (`modern-gpt sample data/runs/<row>/<seed>` does the same by hand). The prompt:")
