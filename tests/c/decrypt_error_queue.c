/*
 * What a decryption leaves on the application's error queue:
 *
 *   decrypt_error_queue CONFIG PROVIDER KEY.pem
 *
 * Loads CONFIG into a library context, then for PKCS#1 v1.5 (implicit
 * rejection off) and OAEP decrypts, on PROVIDER, a valid ciphertext and one
 * whose block has no padding at all. Before each decryption the queue holds
 * an error of the application's own under a mark of the application's own.
 * Prints, per padding ("pkcs1", "oaep") and outcome ("valid", "invalid"):
 *
 *   PAD OUTCOME ok=0|1        EVP_PKEY_decrypt's result was 1
 *   PAD OUTCOME new=N         errors added above the application's mark
 *   PAD OUTCOME reason=TEXT   the newest error's reason text ("-" if none)
 *   PAD OUTCOME kept=0|1      popping to the application's mark succeeds
 *                             and leaves its own error on top
 *   PAD OUTCOME from_empty=N  errors a decryption leaves on an empty queue
 *   provider=NAME             who decrypted (EVP_PKEY_CTX_get0_provider)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static OSSL_LIB_CTX *lib;
static EVP_PKEY *key;

static void die(const char *what)
{
    fprintf(stderr, "decrypt_error_queue: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static EVP_PKEY_CTX *ctx_for(const char *propq, int pad, int decrypt)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, propq);
    unsigned int ir = 0;
    OSSL_PARAM params[2];

    if (ctx == NULL || (decrypt ? EVP_PKEY_decrypt_init(ctx) : EVP_PKEY_encrypt_init(ctx)) != 1
        || EVP_PKEY_CTX_set_rsa_padding(ctx, pad) != 1)
        die("context");
    if (decrypt && pad == RSA_PKCS1_PADDING) {
        params[0] = OSSL_PARAM_construct_uint("implicit-rejection", &ir);
        params[1] = OSSL_PARAM_construct_end();
        if (EVP_PKEY_CTX_set_params(ctx, params) != 1)
            die("implicit rejection off");
    }
    return ctx;
}

static size_t encrypt(int pad, const unsigned char *in, size_t inlen, unsigned char *out)
{
    EVP_PKEY_CTX *ctx = ctx_for("provider=default", pad, 0);
    size_t outlen = 1024;

    if (EVP_PKEY_encrypt(ctx, out, &outlen, in, inlen) != 1)
        die("encrypt");
    EVP_PKEY_CTX_free(ctx);
    return outlen;
}

/* One decryption with the application's error and mark below it; returns
 * the result and leaves the queue as the decryption left it. */
static int decrypt_once(EVP_PKEY_CTX *ctx, const unsigned char *ct, size_t ctlen,
                        unsigned long *mine)
{
    unsigned char out[1024];
    size_t outlen = sizeof(out);

    ERR_clear_error();
    ERR_raise_data(ERR_LIB_USER, 42, "the application's own error");
    *mine = ERR_peek_last_error();
    ERR_set_mark();
    return EVP_PKEY_decrypt(ctx, out, &outlen, ct, ctlen) == 1;
}

static void decrypt(const char *propq, const char *name, int pad, const char *outcome,
                    const unsigned char *ct, size_t ctlen)
{
    EVP_PKEY_CTX *ctx = ctx_for(propq, pad, 1);
    unsigned long mine, top, got;
    int ok, n = 0, seen_mine = 0, kept, empty = 0;
    char reason[256] = "-";

    /* First: what is new on the queue (ERR_get_error yields the oldest
     * first, so everything after the application's error is new). */
    ok = decrypt_once(ctx, ct, ctlen, &mine);
    top = ERR_peek_last_error();
    if (top != mine) {
        const char *r = ERR_reason_error_string(top);
        snprintf(reason, sizeof(reason), "%s", r != NULL ? r : "(no text)");
    }
    while ((got = ERR_get_error()) != 0) {
        if (seen_mine)
            n++;
        else if (got == mine)
            seen_mine = 1;
    }
    if (!seen_mine)
        n = -1;
    /* From an empty queue (where libcrypto sets no mark at all). */
    {
        unsigned char out[1024];
        size_t outlen = sizeof(out);

        ERR_clear_error();
        EVP_PKEY_decrypt(ctx, out, &outlen, ct, ctlen);
        while (ERR_get_error() != 0)
            empty++;
    }
    /* Then: the application's mark is still where it put it. */
    decrypt_once(ctx, ct, ctlen, &mine);
    kept = ERR_pop_to_mark() == 1 && ERR_peek_last_error() == mine
        && ERR_pop_to_mark() == 0;
    ERR_clear_error();

    printf("%s %s ok=%d\n", name, outcome, ok);
    printf("%s %s new=%d\n", name, outcome, n);
    printf("%s %s reason=%s\n", name, outcome, reason);
    printf("%s %s kept=%d\n", name, outcome, kept);
    printf("%s %s from_empty=%d\n", name, outcome, empty);
    printf("provider=%s\n", OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx)));
    EVP_PKEY_CTX_free(ctx);
}

int main(int argc, char **argv)
{
    static const unsigned char msg[] = "the error queue";
    unsigned char block[1024], ct[1024];
    char propq[64];
    size_t k, len;
    FILE *f;
    int pads[2] = { RSA_PKCS1_PADDING, RSA_PKCS1_OAEP_PADDING };
    const char *names[2] = { "pkcs1", "oaep" };

    if (argc != 4) {
        fprintf(stderr, "usage: decrypt_error_queue CONFIG PROVIDER KEY.pem\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1)
        die("config");
    snprintf(propq, sizeof(propq), "provider=%s", argv[2]);
    if ((f = fopen(argv[3], "r")) == NULL
        || (key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, "provider=default")) == NULL)
        die("key");
    fclose(f);
    k = (size_t)EVP_PKEY_get_size(key);
    for (int i = 0; i < 2; i++) {
        len = encrypt(pads[i], msg, sizeof(msg), ct);
        decrypt(propq, names[i], pads[i], "valid", ct, len);
        /* (3.0 names no implicit rejection: its default provider ignores the
     * key, and rejects explicitly.) */
    /* A block with no padding: zeros, then the message. */
        memset(block, 0, k);
        memcpy(block + k - sizeof(msg), msg, sizeof(msg));
        len = encrypt(RSA_NO_PADDING, block, k, ct);
        decrypt(propq, names[i], pads[i], "invalid", ct, len);
    }
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return 0;
}
