/* Thread count of an OpenMP build, set by the runner before each timed turn; a serial
   build (no -fopenmp) ignores it. */
#ifndef REALWORLD_THREADS_H
#define REALWORLD_THREADS_H
#ifdef _OPENMP
#include <omp.h>
#endif
void realworld_set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}
#endif
