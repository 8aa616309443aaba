/* Threaded RSA signing (a benchmark, not a test): THREADS threads sign
 * SHA-256 digests (PKCS#1 v1.5) for SECONDS, either all with one shared
 * EVP_PKEY (a server's certificate key) or each with its own key. Every
 * thread verifies its signatures' first and last one and checks which
 * provider signed. Prints one line:
 *   <signatures/s> <provider name>
 * usage: threads SECONDS THREADS shared|own KEY.pem [KEY.pem ...]
 * (`own` needs THREADS key files). Uses the OPENSSL_CONF of the process. */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct worker {
    pthread_t thread;
    EVP_PKEY *key;
    long count;
    int failed;
    char provider[64];
};

static double seconds;
static pthread_barrier_t start;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int verify(EVP_PKEY *key, const unsigned char *md, const unsigned char *sig, size_t len)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    int ok = ctx != NULL && EVP_PKEY_verify_init(ctx) == 1
             && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
             && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
             && EVP_PKEY_verify(ctx, sig, len, md, 32) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    unsigned char md[32], sig[2048];
    size_t len;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, w->key, NULL);

    w->failed = 1;
    if (ctx == NULL || EVP_PKEY_sign_init(ctx) != 1
        || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1
        || EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1)
        goto done;
    snprintf(w->provider, sizeof(w->provider), "%s",
             OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx)));
    memset(md, 0x5a, sizeof(md));
    pthread_barrier_wait(&start);
    double end = now() + seconds;
    for (;;) {
        /* A different digest per signature: nothing cacheable. */
        memcpy(md, &w->count, sizeof(w->count));
        len = sizeof(sig);
        if (EVP_PKEY_sign(ctx, sig, &len, md, sizeof(md)) != 1)
            goto done;
        if (w->count == 0 && !verify(w->key, md, sig, len))
            goto done;
        w->count++;
        if ((w->count & 3) == 0 && now() >= end)
            break;
    }
    if (!verify(w->key, md, sig, len))
        goto done;
    w->failed = 0;
done:
    EVP_PKEY_CTX_free(ctx);
    return NULL;
}

static EVP_PKEY *load(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    if (k == NULL) {
        fprintf(stderr, "threads: cannot load %s\n", path);
        exit(2);
    }
    return k;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[3], "shared") && strcmp(argv[3], "own"))) {
        fprintf(stderr, "usage: threads SECONDS THREADS shared|own KEY.pem [KEY.pem ...]\n");
        return 2;
    }
    seconds = atof(argv[1]);
    int n = atoi(argv[2]), own = !strcmp(argv[3], "own");
    if (n < 1 || (own && argc - 4 < n)) {
        fprintf(stderr, "threads: need THREADS >= 1 and, with `own`, THREADS keys\n");
        return 2;
    }
    struct worker *w = calloc(n, sizeof(*w));
    EVP_PKEY *shared = own ? NULL : load(argv[4]);
    pthread_barrier_init(&start, NULL, n + 1);
    for (int i = 0; i < n; i++) {
        w[i].key = own ? load(argv[4 + i]) : shared;
        if (pthread_create(&w[i].thread, NULL, run, &w[i]) != 0)
            return 2;
    }
    pthread_barrier_wait(&start);
    double t0 = now();
    long total = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].thread, NULL);
        total += w[i].count;
        failed |= w[i].failed;
        if (i > 0 && strcmp(w[i].provider, w[0].provider))
            failed = 1;
    }
    double t1 = now();
    if (failed) {
        fprintf(stderr, "threads: a signature failed or did not verify\n");
        ERR_print_errors_fp(stderr);
        return 1;
    }
    printf("%.1f %s\n", total / (t1 - t0), w[0].provider);
    for (int i = 0; i < n; i++)
        if (own)
            EVP_PKEY_free(w[i].key);
    EVP_PKEY_free(shared);
    free(w);
    return 0;
}
