/*
 * The OAEP getters of libcrypto's RSA API against rustica and the default
 * provider:
 *
 *   oaep_getters CONFIG KEY.pem
 *
 * CONFIG loads rustica and default. For each provider the program sets up
 * an OAEP encryption (SHA-256, MGF1 with SHA-384, a label), reads every
 * setting back through EVP_PKEY_CTX_get_rsa_padding, _get_rsa_oaep_md_name,
 * _get_rsa_mgf1_md_name and _get0_rsa_oaep_label (which asks for the label
 * as an octet pointer, not a copy), then encrypts and checks which
 * provider did it. Both providers must give the same answers.
 * Exit 0 = they do, and the rustica side ran on rustica.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static const char label[] = "rustica label";

static int fail(const char *side, const char *what)
{
    fprintf(stderr, "oaep_getters: %s: %s\n", side, what);
    ERR_print_errors_fp(stderr);
    return 0;
}

static int check(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *side,
                 char *summary, size_t size)
{
    char propq[64], md[64], mgf1[64];
    const unsigned char *got = NULL;
    unsigned char out[1024];
    size_t outlen = sizeof(out);
    unsigned char *copy = OPENSSL_memdup(label, sizeof(label));
    EVP_PKEY_CTX *ctx;
    const OSSL_PROVIDER *p;
    int pad = 0, len, ok = 0;

    snprintf(propq, sizeof(propq), "provider=%s", side);
    ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, propq);
    if (ctx == NULL || copy == NULL || EVP_PKEY_encrypt_init(ctx) != 1
        || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) != 1
        || EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, "SHA256", NULL) != 1
        || EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, "SHA384", NULL) != 1
        || EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, copy, sizeof(label)) != 1) {
        fail(side, "setting up OAEP");
        goto done;
    }
    copy = NULL; /* the context owns it now */
    if (EVP_PKEY_CTX_get_rsa_padding(ctx, &pad) <= 0 || pad != RSA_PKCS1_OAEP_PADDING) {
        fail(side, "EVP_PKEY_CTX_get_rsa_padding");
        goto done;
    }
    if (EVP_PKEY_CTX_get_rsa_oaep_md_name(ctx, md, sizeof(md)) <= 0) {
        fail(side, "EVP_PKEY_CTX_get_rsa_oaep_md_name");
        goto done;
    }
    if (EVP_PKEY_CTX_get_rsa_mgf1_md_name(ctx, mgf1, sizeof(mgf1)) <= 0) {
        fail(side, "EVP_PKEY_CTX_get_rsa_mgf1_md_name");
        goto done;
    }
    len = EVP_PKEY_CTX_get0_rsa_oaep_label(ctx, (unsigned char **)&got);
    if (len != (int)sizeof(label) || got == NULL || memcmp(got, label, sizeof(label)) != 0) {
        fprintf(stderr, "oaep_getters: %s: get0_rsa_oaep_label returned %d\n", side, len);
        fail(side, "EVP_PKEY_CTX_get0_rsa_oaep_label");
        goto done;
    }
    if (EVP_PKEY_encrypt(ctx, out, &outlen, (const unsigned char *)"m", 1) != 1) {
        fail(side, "encrypting");
        goto done;
    }
    p = EVP_PKEY_CTX_get0_provider(ctx);
    if (p == NULL || strcmp(OSSL_PROVIDER_get0_name(p), side) != 0) {
        fail(side, "the operation ran on another provider");
        goto done;
    }
    snprintf(summary, size, "padding %d, md %s, mgf1 %s, label %d bytes", pad, md, mgf1, len);
    printf("%s: %s\n", side, summary);
    ok = 1;
done:
    OPENSSL_free(copy);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key = NULL;
    FILE *f;
    char expected[256], got[256];
    int ok;

    if (argc != 3) {
        fprintf(stderr, "usage: oaep_getters CONFIG KEY.pem\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1]))
        return fail("setup", "loading the configuration") ? 1 : 1;
    f = fopen(argv[2], "r");
    if (f != NULL)
        key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, NULL);
    if (f != NULL)
        fclose(f);
    if (key == NULL)
        return fail("setup", "reading the key") ? 1 : 1;
    ok = check(lib, key, "default", expected, sizeof(expected))
        && check(lib, key, "rustica", got, sizeof(got));
    if (ok && strcmp(expected, got) != 0)
        ok = fail("rustica", "answers differ from the default provider's");
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
