/*
 * The context getters of libcrypto's RSA API against rustica and the
 * default provider:
 *
 *   ctx_getters CONFIG KEY.pem
 *
 * CONFIG loads rustica and default. For each provider the program
 *   - sets up an OAEP encryption (SHA-256, MGF1 with SHA-384, a label) and
 *     reads every setting back through EVP_PKEY_CTX_get_rsa_padding,
 *     _get_rsa_oaep_md_name, _get_rsa_mgf1_md_name and _get0_rsa_oaep_label
 *     (which asks for the label as an octet pointer, not a copy), then
 *     encrypts;
 *   - sets up a PSS signature (SHA-256, MGF1 with SHA-384, 20-byte salt)
 *     and reads back the padding, salt length, digest, MGF1 digest and the
 *     AlgorithmIdentifier, then signs;
 * and checks which provider did each. Both providers must give the same
 * answers. Exit 0 = they do, and the rustica side ran on rustica.
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

/*
 * A digest name as its NID: providers may answer with any of a digest's
 * names (the default provider's signature gives back the name it was
 * given, its cipher the canonical one).
 */
static int md_nid(const char *name)
{
    const EVP_MD *md = EVP_get_digestbyname(name);

    return md == NULL ? NID_undef : EVP_MD_get_type(md);
}

static int fail(const char *side, const char *what)
{
    fprintf(stderr, "ctx_getters: %s: %s\n", side, what);
    ERR_print_errors_fp(stderr);
    return 0;
}

/* Whether the operation of ctx ran on the provider named side. */
static int ran_on(EVP_PKEY_CTX *ctx, const char *side)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);

    if (p == NULL || strcmp(OSSL_PROVIDER_get0_name(p), side) != 0)
        return fail(side, "the operation ran on another provider");
    return 1;
}

static int check_oaep(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *side,
                 char *summary, size_t size)
{
    char propq[64], md[64], mgf1[64];
    const unsigned char *got = NULL;
    unsigned char out[1024];
    size_t outlen = sizeof(out);
    unsigned char *copy = OPENSSL_memdup(label, sizeof(label));
    EVP_PKEY_CTX *ctx;
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
        fprintf(stderr, "ctx_getters: %s: get0_rsa_oaep_label returned %d\n", side, len);
        fail(side, "EVP_PKEY_CTX_get0_rsa_oaep_label");
        goto done;
    }
    if (EVP_PKEY_encrypt(ctx, out, &outlen, (const unsigned char *)"m", 1) != 1) {
        fail(side, "encrypting");
        goto done;
    }
    if (!ran_on(ctx, side))
        goto done;
    snprintf(summary, size, "padding %d, md %d, mgf1 %d, label %d bytes", pad, md_nid(md),
             md_nid(mgf1), len);
    printf("%s: %s\n", side, summary);
    ok = 1;
done:
    OPENSSL_free(copy);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static int check_pss(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *side,
                     char *summary, size_t size)
{
    char propq[64], mgf1[64], hex[2 * 128 + 1];
    unsigned char algid[128], sig[1024];
    size_t siglen = sizeof(sig), i;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *ctx = NULL;
    const EVP_MD *digest = NULL;
    OSSL_PARAM params[2];
    int pad = 0, saltlen = 0, ok = 0;

    snprintf(propq, sizeof(propq), "provider=%s", side);
    if (md == NULL
        || EVP_DigestSignInit_ex(md, &ctx, "SHA256", lib, propq, key, NULL) != 1
        || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) != 1
        || EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, 20) != 1
        || EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, "SHA384", NULL) != 1) {
        fail(side, "setting up PSS");
        goto done;
    }
    if (EVP_PKEY_CTX_get_rsa_padding(ctx, &pad) <= 0 || pad != RSA_PKCS1_PSS_PADDING) {
        fail(side, "EVP_PKEY_CTX_get_rsa_padding");
        goto done;
    }
    if (EVP_PKEY_CTX_get_rsa_pss_saltlen(ctx, &saltlen) <= 0) {
        fail(side, "EVP_PKEY_CTX_get_rsa_pss_saltlen");
        goto done;
    }
    if (EVP_PKEY_CTX_get_signature_md(ctx, &digest) <= 0 || digest == NULL) {
        fail(side, "EVP_PKEY_CTX_get_signature_md");
        goto done;
    }
    if (EVP_PKEY_CTX_get_rsa_mgf1_md_name(ctx, mgf1, sizeof(mgf1)) <= 0) {
        fail(side, "EVP_PKEY_CTX_get_rsa_mgf1_md_name");
        goto done;
    }
    params[0] = OSSL_PARAM_construct_octet_string("algorithm-id", algid, sizeof(algid));
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_PKEY_CTX_get_params(ctx, params) <= 0 || !OSSL_PARAM_modified(&params[0])
        || params[0].return_size > sizeof(algid)) {
        fail(side, "the algorithm-id parameter");
        goto done;
    }
    for (i = 0; i < params[0].return_size; i++)
        snprintf(hex + 2 * i, 3, "%02x", algid[i]);
    hex[2 * i] = '\0';
    if (EVP_DigestSign(md, sig, &siglen, (const unsigned char *)"m", 1) != 1) {
        fail(side, "signing");
        goto done;
    }
    if (!ran_on(ctx, side))
        goto done;
    snprintf(summary, size, "padding %d, salt %d, md %d, mgf1 %d, algorithm-id %s",
             pad, saltlen, EVP_MD_get_type(digest), md_nid(mgf1), hex);
    printf("%s: %s\n", side, summary);
    ok = 1;
done:
    EVP_MD_CTX_free(md);
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key = NULL;
    FILE *f;
    char expected[512], got[512], pss_expected[512], pss_got[512];
    int ok;

    if (argc != 3) {
        fprintf(stderr, "usage: ctx_getters CONFIG KEY.pem\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1])) {
        fail("setup", "loading the configuration");
        return 1;
    }
    f = fopen(argv[2], "r");
    if (f != NULL)
        key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, NULL);
    if (f != NULL)
        fclose(f);
    if (key == NULL) {
        fail("setup", "reading the key");
        return 1;
    }
    ok = check_oaep(lib, key, "default", expected, sizeof(expected))
        && check_oaep(lib, key, "rustica", got, sizeof(got))
        && check_pss(lib, key, "default", pss_expected, sizeof(pss_expected))
        && check_pss(lib, key, "rustica", pss_got, sizeof(pss_got));
    if (ok && (strcmp(expected, got) != 0 || strcmp(pss_expected, pss_got) != 0))
        ok = fail("rustica", "answers differ from the default provider's");
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
