"""Three intentc libraries in one C program (static, shared, objects, mixed) and in one Python
process (docs/abi.md, "Many libraries in one program"): no duplicate symbols, one
intent_last_error() per thread whichever library set it, one thread pool per process."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentc.driver import build

REPO = Path(__file__).resolve().parents[2]
MODULES = ("alpha", "beta", "gamma")

SOURCE = """\
# {name}: a parallel map, one of three libraries linked together.
import intent as I

@intent.kernel
def {name}_map(x: f32[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * 2.0 + 1.0
"""

PROGRAM = r"""
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alpha.h"
#include "beta.h"
#include "gamma.h"

typedef int32_t (*kernel_fn)(const IntentTensor *, IntentTensor *);

/* Threads of this process that the runtime's pool started. */
static int workers(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    char path[300], name[64];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(name, sizeof name, f) && strncmp(name, "intent-worker", 13) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static const char *seen_on_other_thread;
static void *other_thread(void *arg)
{
    (void)arg;
    seen_on_other_thread = intent_last_error();
    return NULL;
}

int main(void)
{
    kernel_fn kernels[3] = {alpha_map, beta_map, gamma_map};
    const char *names[3] = {"alpha_map", "beta_map", "gamma_map"};
    int64_t n = 1 << 20, shape[1] = {n};
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(i % 1000);
    IntentTensor tx = {x, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    IntentTensor tout = {out, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    intent_set_num_threads(4);
    for (int k = 0; k < 3; k++) {
        int32_t code = kernels[k](NULL, &tout);
        const char *message = intent_last_error();
        printf("%s: %d '%s'\n", names[k], code, message);
        if (code != INTENT_E_NULL || strncmp(message, names[k], strlen(names[k])) != 0)
            return 10 + k; /* the message of the library that failed, whichever answers */
        pthread_t t;
        pthread_create(&t, NULL, other_thread, NULL);
        pthread_join(t, NULL);
        if (seen_on_other_thread[0] != '\0')
            return 20 + k; /* messages are per thread */
        if (kernels[k](&tx, &tout) != 0)
            return 30 + k;
        for (int64_t i = 0; i < n; i++)
            if (out[i] != x[i] * 2.0f + 1.0f)
                return 40 + k;
    }
    int w = workers();
    printf("threads %d, workers %d\n", intent_get_num_threads(), w);
    return w == 3 ? 0 : 50; /* one pool of 4 - 1 workers (the caller takes part) */
}
"""

LINKS = {
    "static": ("alpha.a", "beta.a", "gamma.a"),
    "shared": ("alpha.so", "beta.so", "gamma.so"),
    "objects": ("alpha.o", "beta.o", "gamma.o"),
    "mixed": ("alpha.a", "beta.o", "gamma.so"),
    "mixed, shared first": ("alpha.so", "beta.a", "gamma.o"),
}


def _cc() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    pytest.skip("no C compiler")


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("libraries")
    for name in MODULES:
        source = folder / f"{name}.intent"
        source.write_text(SOURCE.format(name=name))
        for kind in (".so", ".a", ".o"):
            build(source, folder / f"{name}{kind}")
    return folder


def test_shared_libraries_have_a_soname(libraries):
    proc = subprocess.run(["readelf", "-d", str(libraries / "alpha.so")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("no readelf")
    assert "Library soname: [alpha.so]" in proc.stdout
    assert "NODELETE" in proc.stdout


@pytest.mark.parametrize("link", list(LINKS))
def test_three_libraries_in_one_c_program(libraries, tmp_path, link):
    (tmp_path / "main.c").write_text(PROGRAM)
    exe = tmp_path / "main"
    proc = subprocess.run([_cc(), "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Werror", "-O1", "-I", str(libraries),
                           str(tmp_path / "main.c"), *[str(libraries / f) for f in LINKS[link]],
                           f"-Wl,-rpath,{libraries}", "-lm", "-lpthread", "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # no duplicate symbols
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}{run.stderr}"
    assert "workers 3" in run.stdout


def test_three_libraries_in_one_python_process(libraries):
    script = f"""
import os, threading
import numpy as np
import intentc

def workers():
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            names.append(open(f"/proc/self/task/{{task}}/comm").read().strip())
        except OSError:
            pass
    return names.count("intent-worker")

mods = [intentc.load({str(libraries)!r} + f"/{{name}}.so") for name in {MODULES!r}]
mods[0].set_num_threads(4)
x = np.arange(1 << 20, dtype=np.float32) % 1000
for mod, name in zip(mods, {MODULES!r}):
    kernel = getattr(mod, name + "_map")
    out = np.zeros_like(x)
    kernel(x, out)
    assert np.array_equal(out, x * 2 + 1)
    try:
        kernel(x, np.zeros(3, np.float32))
        raise AssertionError("accepted a wrong extent")
    except intentc.KernelError as exc:
        assert str(exc).startswith(name + "_map"), exc
    # Every library answers with the calling thread's last error, whichever library set it.
    assert all(m.last_error().startswith(name + "_map") for m in mods), [m.last_error() for m in mods]
    seen = []
    thread = threading.Thread(target=lambda: seen.append(mods[2].last_error()))
    thread.start(); thread.join()
    assert seen == [""], seen
assert workers() == 3, workers()
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


DLOPEN_TWO = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    void *a = dlopen(argv[1], RTLD_LOCAL | RTLD_NOW), *b = dlopen(argv[2], RTLD_LOCAL | RTLD_NOW);
    if (argc != 3 || !a || !b)
        return 2;
    void (*set)(int32_t) = (void (*)(int32_t))dlsym(a, "intent_set_num_threads");
    int32_t (*get)(void) = (int32_t (*)(void))dlsym(b, "intent_get_num_threads");
    int32_t (*fail)(int32_t, const char *, ...) = (int32_t (*)(int32_t, const char *, ...))dlsym(a, "intent_error");
    const char *(*last)(void) = (const char *(*)(void))dlsym(b, "intent_last_error");
    set(7);
    fail(-4, "set through the first");
    printf("%d '%s'\n", get(), last());
    return get() == 7 && strcmp(last(), "set through the first") == 0 ? 0 : 1;
}
"""


def test_two_cross_built_libraries_share_the_state(tmp_path):
    """AArch64 (under qemu): libraries loaded RTLD_LOCAL share one state, whichever
    toolchain linked them (the cross gcc, or zig's, whose linker takes no -Bsymbolic-functions)."""
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    sysroot = Path("/usr/aarch64-linux-gnu")
    if not (gcc and qemu and sysroot.is_dir()):
        pytest.skip("needs aarch64-linux-gnu-gcc, qemu-aarch64 and its sysroot")
    import importlib.util

    toolchains = ["gcc"] + (["zig"] if importlib.util.find_spec("ziglang") else [])
    libraries = []
    for name, chain in zip(("alpha", "beta"), (toolchains[0], toolchains[-1])):
        source = tmp_path / f"{name}.intent"
        source.write_text(SOURCE.format(name=name))
        os.environ["INTENTC_CROSS_TOOLCHAIN"] = chain
        try:
            build(source, tmp_path / f"{name}.so", target="aarch64-linux-gnu")
        finally:
            del os.environ["INTENTC_CROSS_TOOLCHAIN"]
        libraries.append(tmp_path / f"{name}.so")
    (tmp_path / "two.c").write_text(DLOPEN_TWO)
    subprocess.run([gcc, str(tmp_path / "two.c"), "-o", str(tmp_path / "two"), "-ldl"], check=True)
    run = subprocess.run([qemu, "-L", str(sysroot), str(tmp_path / "two"), *map(str, libraries)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
