"""Small models with real accuracy, for Rafiki's ensembles (issue 15; Rafiki figure 6 on ours).

Trains four models of different sizes and speeds on scikit-learn's bundled digits (1797 8x8
images, 10 classes; ships with python3-sklearn, no download), measures each one's validation
accuracy, exports them as TorchScript with manifests the engine reads, and measures every
subset's ensemble accuracy by Rafiki's rule (majority vote, a tie goes to the more accurate
model). Seeded and single-threaded: the same weights and numbers on every run.

    /usr/bin/python3 scripts/digits_models.py MODELS_DIR [--force]

Writes MODELS_DIR/digits_<name>.pt|.json|.labels.txt (the manifest's `accuracy` is the
validation accuracy), MODELS_DIR/digits-ensembles.json, MODELS_DIR/images/digit_<k>.png
(validation images, k = their true class) and MODELS_DIR/images/digits/ (every validation
image as <index>_<label>.png, 8x8 gray as the models' manifests expect, with labels.txt:
`FILE LABEL` lines; real-mode runs send them with `workload.images: images/digits`).
"""
import io
import itertools
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from PIL import Image

SEED = 20261123
VAL_FRACTION = 0.3


class Gray(nn.Module):
    """The engine delivers [B, 3, 8, 8] in [0, 1] (mean 0, std 1); digits are gray."""
    def forward(self, x):
        return x.mean(dim=1, keepdim=True)


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.gray = Gray()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.gray(x), 1))


class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.gray = Gray()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(torch.flatten(self.gray(x), 1))


class CNN(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.gray = Gray()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(2 * width * 16, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(self.gray(x)), 1))


# name -> (factory, epochs): small and fast to larger and slower.
MODELS = {
    "digits_linear": (Linear, 60),
    "digits_mlp": (lambda: MLP(32), 60),
    "digits_cnn_small": (lambda: CNN(4), 40),
    "digits_cnn": (lambda: CNN(32), 40),
}


def split():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32).unsqueeze(1).repeat(1, 3, 1, 1)
    y = torch.tensor(d.target, dtype=torch.long)
    order = np.random.default_rng(SEED).permutation(len(y))
    n_val = int(len(y) * VAL_FRACTION)
    val, train = order[:n_val], order[n_val:]
    return x[train], y[train], x[val], y[val], d.images[val], d.target[val]


def train(name, factory, epochs, x, y):
    torch.manual_seed(SEED + sum(map(ord, name)))
    model = factory()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=gen).split(64):
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def ensemble_accuracy(preds, accuracy, members, y):
    """Majority vote over `members`; a tie goes to the most accurate model among the tied."""
    by_acc = sorted(members, key=lambda m: -accuracy[m])
    right = 0
    for i in range(len(y)):
        votes = {}
        for m in members:
            votes[preds[m][i]] = votes.get(preds[m][i], 0) + 1
        top = max(votes.values())
        winner = next(preds[m][i] for m in by_acc if votes[preds[m][i]] == top)
        right += int(winner == y[i])
    return right / len(y)


def write(path, data, made):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    made.append(path)


def export(out, name, model, accuracy, made):
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(model), buf)
    write(os.path.join(out, name + ".pt"), buf.getvalue(), made)
    write(os.path.join(out, name + ".labels.txt"), "".join(f"{k}\n" for k in range(10)).encode(),
          made)
    manifest = {"name": name, "file": name + ".pt", "labels": name + ".labels.txt",
                "input_width": 8, "input_height": 8, "resize": 0, "mean": [0.0] * 3,
                "std": [1.0] * 3, "classes": 10, "accuracy": round(accuracy, 6),
                "dataset": "scikit-learn digits, validation 30% (seeded split)"}
    write(os.path.join(out, name + ".json"), (json.dumps(manifest, indent=2) + "\n").encode(), made)


def png_of(img):
    """A digits image (values 0..16) as the 8-bit gray PNG the engine receives."""
    buf = io.BytesIO()
    Image.fromarray((img * 255 / 16).astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def write_validation_images(out, val_images, val_targets, made):
    """Every validation image, <index>_<label>.png, and labels.txt (written last)."""
    folder = os.path.join(out, "images", "digits")
    os.makedirs(folder, exist_ok=True)
    lines = []
    for i, (img, label) in enumerate(zip(val_images, val_targets)):
        name = f"{i:03d}_{int(label)}.png"
        write(os.path.join(folder, name), png_of(img), made)
        lines.append(f"{name} {int(label)}\n")
    header = "# scikit-learn digits, validation 30% (seeded split): FILE LABEL\n"
    write(os.path.join(folder, "labels.txt"), (header + "".join(lines)).encode(), made)


def main(argv):
    out = argv[1] if len(argv) > 1 else "models"
    force = "--force" in argv
    labels = os.path.join(out, "images", "digits", "labels.txt")
    if not force and os.path.exists(os.path.join(out, "digits-ensembles.json")):
        if not os.path.exists(labels):  # models from before the image set: add it alone
            made = []
            _, _, _, _, val_images, val_targets = split()
            write_validation_images(out, val_images, val_targets, made)
            print(f"digits: {len(made)} validation image file(s) written to {out}/images/digits/")
        else:
            print("digits: up to date")
        return 0
    torch.set_num_threads(1)
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    x, y, xv, yv, val_images, val_targets = split()
    made, preds, accuracy = [], {}, {}
    for name, (factory, epochs) in MODELS.items():
        model = train(name, factory, epochs, x, y)
        with torch.no_grad():
            preds[name] = model(xv).argmax(1).tolist()
        accuracy[name] = float(np.mean(np.array(preds[name]) == yv.numpy()))
        export(out, name, model, accuracy[name], made)
        print(f"digits: {name:18s} validation accuracy {accuracy[name]:.4f}")
    subsets = [list(c) for r in range(1, len(MODELS) + 1)
               for c in itertools.combinations(MODELS, r)]
    table = [{"members": s, "accuracy": round(ensemble_accuracy(preds, accuracy, s,
                                                                  yv.tolist()), 6)}
             for s in subsets]
    for row in table:
        print(f"digits: ensemble {'+'.join(row['members']):60s} {row['accuracy']:.4f}")
    for k in range(10):  # one validation image per class, as the engine would receive it
        img = val_images[list(val_targets).index(k)]
        write(os.path.join(out, "images", f"digit_{k}.png"), png_of(img), made)
    write_validation_images(out, val_images, val_targets, made)
    doc = {"dataset": "scikit-learn digits", "validation": len(yv), "seed": SEED,
           "rule": "majority vote; a tie goes to the more accurate model (Rafiki)",
           "models": accuracy, "ensembles": table}
    write(os.path.join(out, "digits-ensembles.json"), (json.dumps(doc, indent=2) + "\n").encode(),
          made)
    print(f"digits: {len(made)} file(s) written to {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
