/* Runs the exp, log and tanh kernels of tests/codegen/test_mathlib.py's AArch64 build
 * (under qemu-aarch64) on the inputs in IN32 (f32 values) and IN64 (f64 values) and
 * writes each kernel's output to OUTDIR/<kernel>.bin, for comparison with the x86-64
 * build and the interpreter bit for bit.
 *
 *     mathlib_driver IN32 IN64 OUTDIR
 *
 * Built with `-include mathlib_kernels.h -I samples/c`. */
#include "driver_common.h"

typedef int32_t (*Kernel)(const IntentTensor *, IntentTensor *);

static void *load(const char *path, size_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    *bytes = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc(*bytes ? *bytes : 1);
    if (fread(data, 1, *bytes, f) != *bytes) {
        perror(path);
        exit(2);
    }
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s IN32 IN64 OUTDIR\n", argv[0]);
        return 2;
    }
    size_t bytes32, bytes64;
    void *in32 = load(argv[1], &bytes32), *in64 = load(argv[2], &bytes64);
    const struct {
        const char *name;
        Kernel kernel;
        int is_f64;
    } kernels[] = {
        {"exp_f32", exp_f32, 0}, {"log_f32", log_f32, 0}, {"tanh_f32", tanh_f32, 0},
        {"exp_f64", exp_f64, 1}, {"log_f64", log_f64, 1}, {"tanh_f64", tanh_f64, 1},
    };
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        const int is_f64 = kernels[k].is_f64;
        const size_t bytes = is_f64 ? bytes64 : bytes32, elem = is_f64 ? 8 : 4;
        void *out = malloc(bytes ? bytes : 1);
        DrvTensor dx, dout;
        drv_tensor1(&dx, is_f64 ? in64 : in32, is_f64 ? DRV_F64 : DRV_F32, (int64_t)(bytes / elem), NULL);
        drv_tensor1(&dout, out, is_f64 ? DRV_F64 : DRV_F32, (int64_t)(bytes / elem), NULL);
        int32_t rc = kernels[k].kernel(&dx.t, &dout.t);
        if (rc != 0) {
            fprintf(stderr, "%s returned %d: %s\n", kernels[k].name, (int)rc, intent_last_error());
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.bin", argv[3], kernels[k].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(out, 1, bytes, f) != bytes) {
            perror(path);
            return 2;
        }
        fclose(f);
        free(out);
    }
    printf("ran %zu kernels\n", sizeof kernels / sizeof kernels[0]);
    return 0;
}
