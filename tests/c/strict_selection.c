/*
 * RSA in an application's own library context that selects rustica
 * strictly:
 *
 *   strict_selection CONFIG BITS
 *
 * The program makes a library context, loads CONFIG into it (the default
 * provider and rustica) and sets "provider=rustica" as its default
 * properties, so that no DRBG matches what the context fetches for itself.
 * Then, all in that context: an RSA key generation, PKCS#1 v1.5 and PSS
 * signatures with their verifications, and PKCS#1 v1.5 and OAEP
 * encryption with their decryptions. Each operation must succeed and must
 * have run on rustica (EVP_PKEY_CTX_get0_provider). Prints one line per
 * operation; exit 0 = all did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static int fail(const char *what)
{
    fprintf(stderr, "strict_selection: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    return 0;
}

static int on_rustica(EVP_PKEY_CTX *ctx, const char *what)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);

    if (p == NULL || strcmp(OSSL_PROVIDER_get0_name(p), "rustica") != 0) {
        fprintf(stderr, "strict_selection: %s ran on %s\n", what,
                p == NULL ? "no provider" : OSSL_PROVIDER_get0_name(p));
        return 0;
    }
    printf("%s: rustica\n", what);
    return 1;
}

static int sign_and_verify(OSSL_LIB_CTX *lib, EVP_PKEY *key, int pad,
                           const char *what)
{
    static const unsigned char msg[] = "strict selection";
    unsigned char sig[2048];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok = 0;

    if (md == NULL
        || EVP_DigestSignInit_ex(md, &pctx, "SHA256", lib, NULL, key, NULL) != 1
        || EVP_PKEY_CTX_set_rsa_padding(pctx, pad) != 1
        || EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) != 1) {
        fail(what);
        goto end;
    }
    if (!on_rustica(pctx, what))
        goto end;
    EVP_MD_CTX_free(md);
    md = EVP_MD_CTX_new();
    pctx = NULL;
    if (md == NULL
        || EVP_DigestVerifyInit_ex(md, &pctx, "SHA256", lib, NULL, key, NULL) != 1
        || EVP_PKEY_CTX_set_rsa_padding(pctx, pad) != 1
        || EVP_DigestVerify(md, sig, siglen, msg, sizeof(msg)) != 1) {
        fail("verification");
        goto end;
    }
    ok = on_rustica(pctx, pad == RSA_PKCS1_PSS_PADDING ? "verify pss" : "verify pkcs1");
end:
    EVP_MD_CTX_free(md);
    return ok;
}

static int encrypt_and_decrypt(OSSL_LIB_CTX *lib, EVP_PKEY *key, int pad,
                               const char *what)
{
    static const unsigned char msg[] = "a premaster secret";
    unsigned char ct[2048], pt[2048];
    size_t ctlen = sizeof(ct), ptlen = sizeof(pt);
    EVP_PKEY_CTX *enc = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    EVP_PKEY_CTX *dec = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    int ok = 0;

    if (enc == NULL || dec == NULL
        || EVP_PKEY_encrypt_init(enc) != 1
        || EVP_PKEY_CTX_set_rsa_padding(enc, pad) != 1
        || EVP_PKEY_encrypt(enc, ct, &ctlen, msg, sizeof(msg)) != 1) {
        fail(what);
        goto end;
    }
    if (!on_rustica(enc, pad == RSA_PKCS1_OAEP_PADDING ? "encrypt oaep" : "encrypt pkcs1"))
        goto end;
    if (EVP_PKEY_decrypt_init(dec) != 1
        || EVP_PKEY_CTX_set_rsa_padding(dec, pad) != 1
        || EVP_PKEY_decrypt(dec, pt, &ptlen, ct, ctlen) != 1) {
        fail("decryption");
        goto end;
    }
    if (ptlen != sizeof(msg) || memcmp(pt, msg, ptlen) != 0) {
        fprintf(stderr, "strict_selection: %s: wrong plaintext\n", what);
        goto end;
    }
    ok = on_rustica(dec, what);
end:
    EVP_PKEY_CTX_free(enc);
    EVP_PKEY_CTX_free(dec);
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY_CTX *gen = NULL;
    EVP_PKEY *key = NULL;
    int ok = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: strict_selection CONFIG BITS\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1
        || EVP_set_default_properties(lib, "provider=rustica") != 1) {
        fail("setting up the library context");
        return 1;
    }
    gen = EVP_PKEY_CTX_new_from_name(lib, "RSA", NULL);
    if (gen == NULL || EVP_PKEY_keygen_init(gen) != 1
        || EVP_PKEY_CTX_set_rsa_keygen_bits(gen, atoi(argv[2])) != 1
        || EVP_PKEY_generate(gen, &key) != 1) {
        fail("key generation");
        goto end;
    }
    ok = on_rustica(gen, "keygen")
        && sign_and_verify(lib, key, RSA_PKCS1_PADDING, "sign pkcs1")
        && sign_and_verify(lib, key, RSA_PKCS1_PSS_PADDING, "sign pss")
        && encrypt_and_decrypt(lib, key, RSA_PKCS1_PADDING, "decrypt pkcs1")
        && encrypt_and_decrypt(lib, key, RSA_PKCS1_OAEP_PADDING, "decrypt oaep");
end:
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(gen);
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
