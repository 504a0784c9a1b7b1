"""The process-wide choices the ``gate`` command makes for its own process, and the library
never makes for a caller's: memory kept by malloc, no huge-page advice, one BLAS thread, and no
garbage collection at exit. Each is left alone when the user chose otherwise."""

from __future__ import annotations


def prepare_process() -> None:
    """Make the choices that must come before numpy is imported."""
    _keep_freed_memory()
    _no_huge_page_advice()
    _one_blas_thread()


def _no_huge_page_advice() -> None:
    """Unless the user set it, tell numpy (before it is imported) not to advise the kernel to
    back large arrays with huge pages. Where transparent huge pages are granted on advice with
    synchronous compaction (a common default, ``defrag = madvise``), every first write to a
    fresh large array stalls on compaction: reading a 7M-line run touches about 250 MB of new
    arrays, and ``gate check`` of two such runs measured 20 % faster without the advice. Set
    ``NUMPY_MADVISE_HUGEPAGE=1`` to keep numpy's default."""
    import os

    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def _one_blas_thread() -> None:
    """Unless the user set it, start OpenBLAS (which numpy loads) with one thread. The gate
    multiplies no matrices, and the thread pool OpenBLAS starts on import — one thread per
    further core, which poll for work for a while — cost a short check 50–100 ms of wall clock
    on a two-core machine (its own threads and its second core were kept waiting). Set
    ``OPENBLAS_NUM_THREADS`` to choose otherwise."""
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _keep_freed_memory() -> None:
    """Ask glibc's malloc to serve blocks under 32 MiB from its heap and to keep up to 64 MiB of
    freed memory there, instead of returning it to the system at once. The run reader's
    per-batch numpy temporaries then reuse their pages rather than fault in new ones (on a
    7M-line run, about 5 thousand page faults instead of 150 thousand). Other C libraries (no
    ``mallopt``) are left alone."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return
    trim_threshold, mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(trim_threshold, 64 << 20)
    mallopt(mmap_threshold, 32 << 20)


def no_collection_at_exit() -> None:
    """The process is about to end, so its objects are moved out of the garbage collector's
    reach (``gc.freeze``) and the interpreter's shutdown does not trace them all once more
    (with numpy and the package loaded, 20–40 ms of a short command). Objects are still freed,
    files closed and ``atexit`` functions run as before; only unreachable cycles are left to
    the end of the process."""
    import gc

    gc.freeze()
