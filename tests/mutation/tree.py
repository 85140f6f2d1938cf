"""tests/mutation/tree.py — which files are mutated and the copy of the tree they are mutated in.

The files: those the branch changes against a base revision (plus uncommitted changes), or every .c/.h
under named folders; CUDA sources are left out (no GPU runs their tests here). The copy: the working tree
as git sees it, brought up to date in place so a second run rebuilds only what changed.
"""
import hashlib
import os
import shutil
import subprocess
import sys

PROD_DIRS = ("util", "fp8", "planner", "catalog", "reports", "exec", "tui", "cli")


def sh(cmd, cwd, timeout=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def write(path, text):
    with open(path, "w", encoding="utf-8") as o:
        o.write(text)


def git_files(root, base):
    """Production C files changed against base (committed since the merge base, or not yet committed)."""
    names = set()
    for args in (["git", "diff", "--name-only", "--diff-filter=AMR", base + "...HEAD"],
                 ["git", "diff", "--name-only", "--diff-filter=AMR", "HEAD"]):
        r = sh(args, root)
        if r.returncode:
            sys.exit("mutate: %s failed: %s" % (" ".join(args), r.stdout.decode(errors="replace").strip()))
        names.update(r.stdout.decode().split())
    return sorted(n for n in names if n.split("/")[0] in PROD_DIRS and "/cuda/" not in n and n.endswith((".c", ".h")))


def dir_files(root, dirs):
    out = []
    for d in dirs:
        d = d.rstrip("/")
        if not os.path.isdir(os.path.join(root, d)):
            sys.exit("mutate: --dir %s: no such folder" % d)
        for base, _, files in os.walk(os.path.join(root, d)):
            rel = os.path.relpath(base, root)
            if "cuda" in rel.split(os.sep):
                continue
            out += [os.path.join(rel, f) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


def same_file(a, b):
    if not os.path.isfile(b) or os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def copy_tree(root, dest, rev=None, skip=None):
    """The working tree as git sees it (tracked and untracked, not ignored, outside skip), or revision rev,
    into dest. A working-tree copy is brought up to date in place: files that differ are copied (with a new
    mtime, so make rebuilds what depends on them), files git no longer lists are removed, and the copy's build
    folders (build*/) stay, so a second run rebuilds only what changed."""
    if rev and os.path.exists(dest):
        shutil.rmtree(dest)
    if rev:
        os.makedirs(dest)
        archive = subprocess.Popen(["git", "archive", rev], cwd=root, stdout=subprocess.PIPE)
        if subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout).returncode or archive.wait():
            sys.exit("mutate: git archive %s failed" % rev)
        return
    r = sh(["git", "ls-files", "-co", "--exclude-standard", "-z"], root)
    if r.returncode:
        sys.exit("mutate: git ls-files failed")
    wanted = set()
    for rel in r.stdout.decode().split("\0"):
        if not rel or not os.path.isfile(os.path.join(root, rel)):
            continue
        if skip and os.path.abspath(os.path.join(root, rel)).startswith(skip + os.sep):
            continue  # the scratch folder itself, when .gitignore does not name it
        wanted.add(os.path.normpath(rel))
        if same_file(os.path.join(root, rel), os.path.join(dest, rel)):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        if os.path.lexists(os.path.join(dest, rel)):
            os.unlink(os.path.join(dest, rel))
        shutil.copyfile(os.path.join(root, rel), os.path.join(dest, rel))
        shutil.copymode(os.path.join(root, rel), os.path.join(dest, rel))
    for base, dirs, names in os.walk(dest):
        if base == dest:
            dirs[:] = [d for d in dirs if not d.startswith("build")]
        for n in names:
            rel = os.path.normpath(os.path.relpath(os.path.join(base, n), dest))
            if rel not in wanted:
                os.unlink(os.path.join(base, n))


def tree_key(tree, files, scripts):
    """A digest of what the scripts' reach depends on: every file of the copy outside its build folders, the
    files mutated and the scripts run."""
    h = hashlib.sha256(repr((files, scripts)).encode())
    for base, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not (base == tree and d.startswith("build")))
        for n in sorted(names):
            full = os.path.join(base, n)
            if os.path.isfile(full) and not os.path.islink(full):
                h.update(os.path.relpath(full, tree).encode() + b"\0")
                with open(full, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()
