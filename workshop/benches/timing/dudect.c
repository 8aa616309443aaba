/*
 * dudect-style timing check of RSA decryption: does a failed decryption
 * take a different time from a successful one?
 *
 * One RSA-2048 key; a pool of valid ciphertexts (the padding checks out)
 * and a pool of invalid ones (random values below n, whose padding does
 * not). Each round picks a class at random, picks a ciphertext of that
 * class, and times one EVP_PKEY_decrypt on each provider (rustica and the
 * default provider, in random order), in cycles (rdtsc behind lfence).
 * At the end, for each provider, Welch's t statistic between the two
 * classes over the whole distribution and over percentile crops (only the
 * samples below the pth percentile of that provider's timings), as dudect
 * does: a constant-time implementation stays below about 4.5.
 *
 * A benchmark, not a test: run it pinned to one core on an idle machine.
 *
 * usage: dudect MODULE {pkcs1|oaep} [SAMPLES]
 *   MODULE: path of rustica.so (a file named rustica.so); pkcs1 runs with implicit rejection off on
 *   both providers (OpenSSL 3.0's default provider has none).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#define POOL 512
#define KEYBITS 2048

static void die(const char *what)
{
    fprintf(stderr, "dudect: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static inline uint64_t cycles(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static EVP_PKEY_CTX *decrypt_ctx(EVP_PKEY *key, const char *propq, int pad)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, propq);
    if (ctx == NULL || EVP_PKEY_decrypt_init(ctx) != 1)
        die("decrypt init");
    if (EVP_PKEY_CTX_set_rsa_padding(ctx, pad) != 1)
        die("set padding");
    if (pad == RSA_PKCS1_PADDING) {
        unsigned int off = 0;
        OSSL_PARAM p[] = {
            OSSL_PARAM_construct_uint("implicit-rejection", &off),
            OSSL_PARAM_END,
        };
        /* The default provider of OpenSSL 3.0 ignores the unknown name. */
        if (EVP_PKEY_CTX_set_params(ctx, p) != 1)
            die("set implicit-rejection");
    }
    return ctx;
}

struct sample {
    uint64_t t;
    int cls;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Welch's t over the samples with t <= limit. */
static double welch(const struct sample *s, size_t n, uint64_t limit, double *diff)
{
    double sum[2] = {0}, sq[2] = {0}, cnt[2] = {0};
    for (size_t i = 0; i < n; i++) {
        if (s[i].t > limit)
            continue;
        double x = (double)s[i].t;
        sum[s[i].cls] += x;
        sq[s[i].cls] += x * x;
        cnt[s[i].cls] += 1;
    }
    if (cnt[0] < 2 || cnt[1] < 2)
        return NAN;
    double m0 = sum[0] / cnt[0], m1 = sum[1] / cnt[1];
    double v0 = (sq[0] - cnt[0] * m0 * m0) / (cnt[0] - 1);
    double v1 = (sq[1] - cnt[1] * m1 * m1) / (cnt[1] - 1);
    *diff = m1 - m0;
    return (m1 - m0) / sqrt(v0 / cnt[0] + v1 / cnt[1]);
}

static void report(const char *name, const struct sample *s, size_t n)
{
    uint64_t *sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL)
        die("malloc");
    for (size_t i = 0; i < n; i++)
        sorted[i] = s[i].t;
    qsort(sorted, n, sizeof *sorted, cmp_u64);
    static const int crops[] = {100, 99, 95, 90, 75, 50};
    double worst = 0;
    printf("%-8s median %llu cycles;", name, (unsigned long long)sorted[n / 2]);
    for (size_t c = 0; c < sizeof crops / sizeof *crops; c++) {
        size_t at = crops[c] == 100 ? n - 1 : n * crops[c] / 100;
        double diff = 0;
        double t = welch(s, n, sorted[at], &diff);
        printf(" p%d |t|=%.2f (%+.0f)", crops[c], fabs(t), diff);
        if (fabs(t) > worst)
            worst = fabs(t);
    }
    printf("; max |t| %.2f\n", worst);
    free(sorted);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODULE {pkcs1|oaep} [SAMPLES]\n", argv[0]);
        return 2;
    }
    const char *module = argv[1];
    int pad = strcmp(argv[2], "oaep") == 0 ? RSA_PKCS1_OAEP_PADDING : RSA_PKCS1_PADDING;
    size_t samples = argc > 3 ? strtoull(argv[3], NULL, 10) : 200000;

    if (OSSL_PROVIDER_load(NULL, "default") == NULL)
        die("loading the default provider");
    /* Loaded by name from its directory, so the provider is called rustica. */
    char *dir = strdup(module), *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    if (slash == NULL || OSSL_PROVIDER_set_default_search_path(NULL, dir) != 1 ||
        OSSL_PROVIDER_load(NULL, "rustica") == NULL)
        die("loading rustica");

    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, "provider=default", "RSA", (size_t)KEYBITS);
    if (key == NULL)
        die("key generation");
    size_t k = (size_t)EVP_PKEY_get_size(key);

    /* Ciphertext pools, made and checked by the default provider. */
    unsigned char *pool[2];
    pool[0] = malloc(POOL * k);
    pool[1] = malloc(POOL * k);
    EVP_PKEY_CTX *enc = EVP_PKEY_CTX_new_from_pkey(NULL, key, "provider=default");
    if (enc == NULL || EVP_PKEY_encrypt_init(enc) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(enc, pad) != 1)
        die("encrypt init");
    EVP_PKEY_CTX *raw = EVP_PKEY_CTX_new_from_pkey(NULL, key, "provider=default");
    if (raw == NULL || EVP_PKEY_encrypt_init(raw) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(raw, RSA_NO_PADDING) != 1)
        die("raw encrypt init");
    EVP_PKEY_CTX *check = decrypt_ctx(key, "provider=default", pad);
    unsigned char *out = malloc(k);
    for (int i = 0; i < POOL; i++) {
        unsigned char msg[32], em[512];
        size_t len = k;
        if (RAND_bytes(msg, sizeof msg) != 1 ||
            EVP_PKEY_encrypt(enc, pool[0] + i * k, &len, msg, sizeof msg) != 1 || len != k)
            die("valid ciphertext");
        for (;;) {
            /* A random block below n: its padding is invalid (checked). */
            if (RAND_bytes(em, (int)k) != 1)
                die("random");
            em[0] = 0;
            len = k;
            if (EVP_PKEY_encrypt(raw, pool[1] + i * k, &len, em, k) != 1 || len != k)
                die("invalid ciphertext");
            size_t olen = k;
            if (EVP_PKEY_decrypt(check, out, &olen, pool[1] + i * k, k) != 1)
                break;
        }
        ERR_clear_error();
    }

    const char *names[2] = {"rustica", "default"};
    EVP_PKEY_CTX *ctx[2] = {decrypt_ctx(key, "provider=rustica", pad),
                            decrypt_ctx(key, "provider=default", pad)};
    if (strcmp(OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx[0])), "rustica") != 0)
        die("routing the decryption to rustica");

    struct sample *s[2] = {malloc(samples * sizeof(struct sample)),
                           malloc(samples * sizeof(struct sample))};
    unsigned char *coin = malloc(samples * 3);
    if (s[0] == NULL || s[1] == NULL || coin == NULL ||
        RAND_bytes(coin, (int)(samples * 3)) != 1)
        die("sample buffers");
    size_t wrong = 0;
    for (size_t i = 0; i < samples; i++) {
        int cls = coin[3 * i] & 1;
        const unsigned char *c = pool[cls] + (size_t)(coin[3 * i + 1] | (coin[3 * i + 2] << 8)) % POOL * k;
        for (int j = 0; j < 2; j++) {
            int which = j ^ (coin[3 * i] >> 1 & 1);
            size_t olen = k;
            uint64_t t0 = cycles();
            int ok = EVP_PKEY_decrypt(ctx[which], out, &olen, c, k);
            uint64_t t1 = cycles();
            ERR_clear_error();
            wrong += (ok == 1) != (cls == 0);
            s[which][i].t = t1 - t0;
            s[which][i].cls = cls;
        }
    }
    printf("%s, RSA-%d, %zu samples per provider (class 0 valid, class 1 invalid; "
           "(+x) = invalid minus valid, cycles)\n",
           pad == RSA_PKCS1_OAEP_PADDING ? "OAEP" : "PKCS#1 v1.5, implicit rejection off",
           KEYBITS, samples);
    if (wrong != 0)
        printf("WARNING: %zu decryptions had the wrong outcome\n", wrong);
    for (int j = 0; j < 2; j++)
        report(names[j], s[j], samples);
    return 0;
}
