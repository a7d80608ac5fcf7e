/* floyd-warshall: paths[i][j] = min(paths[i][j], paths[i][k] + paths[k][j]), rows i in
   parallel for each k (row k does not change in round k). */
#include "../realworld_threads.h"

void floyd_warshall(int n, int *paths) {
    for (int k = 0; k < n; k++) {
        #pragma omp parallel for
        for (int i = 0; i < n; i++) {
            int pik = paths[(long)i * n + k];
            for (int j = 0; j < n; j++) {
                int via = pik + paths[(long)k * n + j];
                int cur = paths[(long)i * n + j];
                paths[(long)i * n + j] = cur < via ? cur : via;
            }
        }
    }
}
