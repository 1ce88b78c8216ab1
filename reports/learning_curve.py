"""The learning curve of `servelab train`: DIR/learning_curve.csv drawn as DIR/learning_curve.png.

    python3 reports/learning_curve.py DIR

Two panels by episode: the SLO attainment of the exploring (sampled) policy on the episode's
own seeds and of the argmax (deployed) policy on fixed evaluation seeds, and the mean
reward per request (Rafiki's equation 7 over each episode's batches, divided by its requests),
with the mean batch size on a second axis.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_curve(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no episodes")
    return {key: [float(r[key]) for r in rows] for key in rows[0]}


def draw(curve, out_png, title):
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    episodes = curve["episode"]
    top.plot(episodes, curve["slo_attainment"], marker="o", ms=3, alpha=0.6,
             label="exploring policy, the episode's seeds")
    top.plot(episodes, curve["eval_attainment"], marker="s", ms=3,
             label="argmax policy, fixed evaluation seeds")
    top.set_ylabel("SLO attainment")
    top.set_ylim(min(curve["slo_attainment"] + curve["eval_attainment"] + [0.9]) - 0.02, 1.005)
    top.legend(fontsize=8)
    top.grid(alpha=0.3)
    bottom.plot(episodes, curve["reward_per_request"], marker="o", ms=3, label="reward / request")
    bottom.set_ylabel("reward per request (eq. 7)")
    bottom.set_xlabel("episode")
    bottom.grid(alpha=0.3)
    batch = bottom.twinx()
    batch.plot(episodes, curve["mean_batch"], color="tab:gray", ls="--", label="mean batch")
    batch.set_ylabel("mean batch size", color="tab:gray")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


def main(argv):
    if len(argv) != 2:
        print("usage: learning_curve.py DIR (holding learning_curve.csv)", file=sys.stderr)
        return 2
    folder = argv[1]
    curve = read_curve(os.path.join(folder, "learning_curve.csv"))
    draw(curve, os.path.join(folder, "learning_curve.png"),
         f"rafiki-rl training: {len(curve['episode'])} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
