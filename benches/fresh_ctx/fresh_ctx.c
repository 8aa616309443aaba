/*
 * Operations per second with a fresh signing context per operation, the
 * pattern of BIND's dst layer and PowerDNS for every RRSIG: a new
 * EVP_MD_CTX, EVP_DigestSignInit_ex (or VerifyInit), one EVP_DigestSign
 * (or Verify), free. The loop runs for a fixed wall time after a warm-up
 * and prints one line, "OPS_PER_SECOND PROVIDER": the provider is the one
 * that ran the last operation (EVP_PKEY_CTX_get0_provider), so a run on
 * the wrong side is seen, not measured.
 *
 *   fresh_ctx sign|verify KEY.pem MILLISECONDS
 *
 * Which providers are loaded is the caller's openssl.cnf (OPENSSL_CONF);
 * scripts/bench-fresh-ctx.sh runs A and B in turns.
 */
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
    fprintf(stderr, "fresh_ctx: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

/* A 64-byte message: about an RRset's signed data at the small end. */
static const unsigned char message[64] = "rustica fresh-context bench: one RRset's worth of data.";

/* One operation through a new context; returns its provider's name. */
static const char *one(EVP_PKEY *key, int sign, unsigned char *sig, size_t *siglen)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    const char *name;

    if (md == NULL)
        fail("EVP_MD_CTX_new");
    if (sign) {
        size_t len = *siglen;

        if (EVP_DigestSignInit_ex(md, &pctx, "SHA256", NULL, NULL, key, NULL) != 1
            || EVP_DigestSign(md, sig, &len, message, sizeof(message)) != 1)
            fail("sign");
        *siglen = len;
    } else if (EVP_DigestVerifyInit_ex(md, &pctx, "SHA256", NULL, NULL, key, NULL) != 1
               || EVP_DigestVerify(md, sig, *siglen, message, sizeof(message)) != 1) {
        fail("verify");
    }
    name = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx));
    EVP_MD_CTX_free(md);
    return name;
}

int main(int argc, char **argv)
{
    unsigned char sig[2048];
    size_t siglen = sizeof(sig);
    const char *provider = "?";
    EVP_PKEY *key;
    FILE *f;
    double ms, start, end;
    long ops = 0;
    int sign;

    if (argc != 4 || (strcmp(argv[1], "sign") != 0 && strcmp(argv[1], "verify") != 0))
        fail("usage: fresh_ctx sign|verify KEY.pem MILLISECONDS");
    sign = strcmp(argv[1], "sign") == 0;
    ms = atof(argv[3]);
    if ((f = fopen(argv[2], "r")) == NULL)
        fail("cannot open the key");
    key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (key == NULL)
        fail("cannot read the key");
    /* The signature verify checks, and a warm-up of both paths' caches. */
    one(key, 1, sig, &siglen);
    for (int i = 0; i < 50; i++) {
        size_t len = sizeof(sig);

        one(key, sign, sig, sign ? &len : &siglen);
    }
    start = now();
    end = start + ms / 1e3;
    do {
        for (int i = 0; i < 16; i++) {
            size_t len = sizeof(sig);

            provider = one(key, sign, sig, sign ? &len : &siglen);
        }
        ops += 16;
    } while (now() < end);
    printf("%.2f %s\n", (double)ops / (now() - start), provider);
    EVP_PKEY_free(key);
    return 0;
}
