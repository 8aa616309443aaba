/*
 * Which digests RSA signs with, asked of the default provider at run time,
 * and the same digests through rustica:
 *
 *   digest_matrix CONFIG KEY.pem [legacy]
 *
 * CONFIG loads the default provider and rustica; with "legacy" the legacy
 * provider is loaded too. For every digest any loaded provider offers
 * (EVP_MD_do_all_provided), the program signs a message with PKCS#1 v1.5
 * on the default provider. Where the default provider signs, rustica must
 * sign too, with the same bytes (PKCS#1 v1.5 is deterministic), each side
 * must verify the other's signature, and each rustica operation must have
 * run on rustica. Where the default provider refuses, rustica must refuse.
 * Prints "signed NAME" or "refused NAME" per digest and a final
 * "rustica signs=N verifies=M" line; exit 0 = everything matched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#define MAX_DIGESTS 128

static char *names[MAX_DIGESTS];
static int count;

static void collect(EVP_MD *md, void *arg)
{
    const char *name = EVP_MD_get0_name(md);
    int i;

    (void)arg;
    for (i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return;
    if (count < MAX_DIGESTS)
        names[count++] = strdup(name);
}

static const unsigned char msg[] = "a document signed with every digest";

/* Signs msg with digest name on the provider preferred by propq. */
static int sign(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *name,
                const char *propq, unsigned char *sig, size_t *siglen,
                const char **provider)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok;

    ok = md != NULL
        && EVP_DigestSignInit_ex(md, &pctx, name, lib, propq, key, NULL) == 1
        && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1
        && EVP_DigestSign(md, sig, siglen, msg, sizeof(msg)) == 1;
    *provider = pctx != NULL && EVP_PKEY_CTX_get0_provider(pctx) != NULL
        ? OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx)) : "none";
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return ok;
}

static int verify(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *name,
                  const char *propq, const unsigned char *sig, size_t siglen,
                  const char **provider)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok;

    ok = md != NULL
        && EVP_DigestVerifyInit_ex(md, &pctx, name, lib, propq, key, NULL) == 1
        && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1
        && EVP_DigestVerify(md, sig, siglen, msg, sizeof(msg)) == 1;
    *provider = pctx != NULL && EVP_PKEY_CTX_get0_provider(pctx) != NULL
        ? OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx)) : "none";
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key = NULL;
    FILE *f;
    int i, bad = 0, signs = 0, verifies = 0, stock = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: digest_matrix CONFIG KEY.pem [legacy]\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    if (argc > 3) {
        /* Some builds have no legacy provider: then the list is shorter. */
        printf("legacy provider %s\n",
               OSSL_PROVIDER_load(lib, "legacy") != NULL ? "loaded" : "not available");
        ERR_clear_error();
    }
    f = fopen(argv[2], "r");
    if (f == NULL
        || (key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, "provider=default")) == NULL) {
        fprintf(stderr, "digest_matrix: cannot read %s\n", argv[2]);
        ERR_print_errors_fp(stderr);
        return 1;
    }
    fclose(f);
    EVP_MD_do_all_provided(lib, collect, NULL);
    for (i = 0; i < count; i++) {
        unsigned char a[1024], b[1024];
        size_t alen = sizeof(a), blen = sizeof(b);
        const char *pa, *pb, *pv;
        int stock_signs = sign(lib, key, names[i], "?provider=default", a, &alen, &pa);
        int rustica_signs = sign(lib, key, names[i], "?provider=rustica", b, &blen, &pb);

        if (stock_signs && strcmp(pa, "default") != 0) {
            fprintf(stderr, "%s: the stock side ran on %s\n", names[i], pa);
            bad = 1;
            continue;
        }
        if (!stock_signs) {
            printf("refused %s\n", names[i]);
            if (rustica_signs) {
                fprintf(stderr, "%s: rustica signs where the default provider refuses\n",
                        names[i]);
                bad = 1;
            }
            continue;
        }
        stock++;
        printf("signed %s\n", names[i]);
        if (!rustica_signs || strcmp(pb, "rustica") != 0) {
            fprintf(stderr, "%s: rustica did not sign (ran on %s)\n", names[i], pb);
            bad = 1;
            continue;
        }
        signs++;
        if (alen != blen || memcmp(a, b, alen) != 0) {
            fprintf(stderr, "%s: rustica's signature differs from the default provider's\n",
                    names[i]);
            bad = 1;
        }
        if (!verify(lib, key, names[i], "?provider=rustica", a, alen, &pv)
            || strcmp(pv, "rustica") != 0) {
            fprintf(stderr, "%s: rustica does not verify the default provider's signature\n",
                    names[i]);
            bad = 1;
        } else {
            verifies++;
        }
        if (!verify(lib, key, names[i], "?provider=default", b, blen, &pv)
            || strcmp(pv, "default") != 0) {
            fprintf(stderr, "%s: the default provider does not verify rustica's signature\n",
                    names[i]);
            bad = 1;
        }
    }
    printf("default signs with %d digests; rustica signs=%d verifies=%d\n", stock, signs,
           verifies);
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return bad || stock == 0 ? 1 : 0;
}
