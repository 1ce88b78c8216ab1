"""Driving `servelab serve` processes for the weight store's benchmarks and figures.

Shared by scripts/bench_store_processes.py (PSS of several servers) and
scripts/store_figures.py (the TrIMS and PRETZEL figures): starting a server on its own model
store (and optionally a weight store), registering models from the model root by their
manifests, classifying one image with the answer's time split, reading a process's PSS, and
dropping files from the page cache so that a load reads the disk.
"""
import json
import os
import re
import subprocess
import threading
import time
import urllib.request

IMAGE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "images",
                          "gradient.jpg")


class Server:
    """One `servelab serve` process on 127.0.0.1 (an ephemeral port). Its log is read on a
    thread of its own, so that a long run never blocks on a full pipe; `log` keeps its lines.
    Use as a context manager: the process is ended on leaving."""

    def __init__(self, servelab, store_dir, model_root, weight_store=None, host_models=None,
                 processes=1):
        args = [servelab, "serve", "--port", "0", "--store", store_dir, "--model-root",
                os.path.abspath(model_root), "--io-threads", "1"]
        if weight_store:
            args += ["--weight-store", weight_store]
        if host_models:
            args += ["--host-models", str(host_models)]
        if processes > 1:  # replicas forked after one start-up (`serve --processes`)
            args += ["--processes", str(processes)]
        self.model_root = os.path.abspath(model_root)
        self.log = []
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.ports = []
        for line in self.proc.stdout:
            self.log.append(line)
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                self.ports.append(int(m.group(1)))
                if len(self.ports) == processes:
                    break
        if len(self.ports) < processes:
            raise RuntimeError("servelab serve did not start:\n" + "".join(self.log[-20:]))
        self.port = self.ports[0]
        threading.Thread(target=self._drain, daemon=True).start()

    def replica(self, k):
        """A handle on replica k of a `--processes` group (its port; the same model root)."""
        r = Server.__new__(Server)
        r.model_root, r.log, r.proc, r.ports, r.port = self.model_root, [], None, [], self.ports[k]
        return r

    def pids(self):
        """The group's processes: this one and, with --processes, its replicas."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return [self.proc.pid] + [int(p) for p in f.read().split()]

    def _drain(self):
        for line in self.proc.stdout:
            self.log.append(line)

    @property
    def pid(self):
        return self.proc.pid

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def request(self, method, path, body=None, ctype="application/json"):
        """(status, parsed JSON answer); raises RuntimeError with the answer on an error."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body,
                                     headers={"Content-Type": ctype}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from None

    def register(self, name):
        """Registers models/<name>.pt with the preprocessing its manifest gives; returns the
        registration's wall time in seconds."""
        manifest = read_manifest(self.model_root, name)
        body = {"name": name, "path": os.path.join(self.model_root, name + ".pt"),
                "preprocess": {k: manifest[k] for k in
                               ("input_width", "input_height", "resize", "mean", "std")}}
        start = time.perf_counter()
        self.request("POST", "/register", json.dumps(body).encode())
        return time.perf_counter() - start

    def classify(self, name, image=None):
        """One request: the answer with its wall time added as `wall_ms`."""
        image = image if image is not None else read_image()
        start = time.perf_counter()
        _, answer = self.request("POST", f"/classify/{name}", image, "image/jpeg")
        answer["wall_ms"] = (time.perf_counter() - start) * 1e3
        return answer

    def model(self, name):
        return self.request("GET", f"/models/{name}")[1]


def read_manifest(model_root, name):
    with open(os.path.join(model_root, name + ".json")) as f:
        return json.load(f)


def read_image():
    with open(IMAGE_PATH, "rb") as f:
        return f.read()


def pss_kb(pid):
    """The proportional set size of process `pid` in KiB (/proc/PID/smaps_rollup)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def data_pss_kb(pid, store_dir=None):
    """PSS in KiB of process `pid`'s data: its anonymous mappings (heap, stacks, the tensors
    it allocated) and its mappings of files under `store_dir` (a weight store's blobs). Shared
    libraries and other files are left out: their pages are shared with whatever else runs on
    the machine, so their share moves with other processes (/proc/PID/smaps)."""
    keep, total = False, 0
    store_dir = os.path.abspath(store_dir) + os.sep if store_dir else None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's header
                path = head[5].strip() if len(head) == 6 else ""
                keep = (not path.startswith("/")
                        or bool(store_dir and path.startswith(store_dir)))
            elif keep and line.startswith("Pss:"):
                total += int(line.split()[1])
    return total


def drop_from_page_cache(*dirs):
    """Asks the kernel to drop the cached pages of every file under `dirs` (clean pages that
    no process maps), so that the next read of them goes to the disk. Needs no privileges."""
    for d in dirs:
        for root, _, files in os.walk(d):
            for name in files:
                try:
                    fd = os.open(os.path.join(root, name), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.fsync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
