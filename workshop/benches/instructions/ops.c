/* N RSA operations of one kind through one EVP_PKEY_CTX, as `openssl speed`
 * does (a benchmark driver for workshop/scripts/bench-instructions.sh, which runs it
 * under callgrind at two values of N). The input (digest, signature,
 * ciphertext) is made once, then WARMUP operations run; callgrind collects
 * only the N operations after them (run it with --collect-atstart=no), so
 * neither start-up nor the random cost of making the input or of the first
 * operation's blinding pair enters the count. Every result is checked.
 * Prints one line:
 *   <provider of the operation's context> <operations counted>
 * usage: ops OPERATION WARMUP N KEY.pem
 *   OPERATION: sign-pkcs1 verify-pkcs1 sign-pss verify-pss (SHA-256; PSS
 *   with MGF1-SHA-256 and a 32-byte salt), encrypt-oaep decrypt-oaep
 *   (SHA-256, MGF1-SHA-256, no label), decrypt-pkcs1 (PKCS#1 v1.5),
 *   sign-speed verify-speed (what `openssl speed rsaN` times: PKCS#1 v1.5
 *   over 36 bytes with no digest set, so no DigestInfo).
 * Uses the OPENSSL_CONF of the process. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

enum kind { SIGN, VERIFY, ENCRYPT, DECRYPT };

struct operation {
    const char *name;
    enum kind kind;
    int padding;
    size_t input_len; /* of the signed digest; 0: a SHA-256 digest, set */
};

static const struct operation operations[] = {
    { "sign-pkcs1", SIGN, RSA_PKCS1_PADDING },
    { "verify-pkcs1", VERIFY, RSA_PKCS1_PADDING },
    { "sign-pss", SIGN, RSA_PKCS1_PSS_PADDING },
    { "verify-pss", VERIFY, RSA_PKCS1_PSS_PADDING },
    { "encrypt-oaep", ENCRYPT, RSA_PKCS1_OAEP_PADDING },
    { "decrypt-oaep", DECRYPT, RSA_PKCS1_OAEP_PADDING },
    { "decrypt-pkcs1", DECRYPT, RSA_PKCS1_PADDING },
    { "sign-speed", SIGN, RSA_PKCS1_PADDING, 36 },
    { "verify-speed", VERIFY, RSA_PKCS1_PADDING, 36 },
};

/* Sets the padding and its parameters on a context already initialised for
 * the operation's kind (or its counterpart: sign for verify, encrypt for
 * decrypt, when the input is made). */
static int configure(EVP_PKEY_CTX *ctx, const struct operation *op, int signature)
{
    if (EVP_PKEY_CTX_set_rsa_padding(ctx, op->padding) != 1)
        return 0;
    if (signature && op->input_len == 0) {
        if (EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1)
            return 0;
        if (op->padding == RSA_PKCS1_PSS_PADDING
            && (EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1
                || EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST) != 1))
            return 0;
    } else if (op->padding == RSA_PKCS1_OAEP_PADDING) {
        if (EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) != 1
            || EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1)
            return 0;
    }
    return 1;
}

static int init(EVP_PKEY_CTX *ctx, enum kind kind)
{
    switch (kind) {
    case SIGN: return EVP_PKEY_sign_init(ctx) == 1;
    case VERIFY: return EVP_PKEY_verify_init(ctx) == 1;
    case ENCRYPT: return EVP_PKEY_encrypt_init(ctx) == 1;
    case DECRYPT: return EVP_PKEY_decrypt_init(ctx) == 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const struct operation *op = NULL;
    unsigned char digest[36], message[32], input[2048], output[2048];
    size_t digest_len;
    size_t input_len = sizeof(input), output_len;
    EVP_PKEY_CTX *ctx = NULL, *prep = NULL;
    EVP_PKEY *key = NULL;
    FILE *file;
    long warmup, n, i = 0;
    int status = 1;

    if (argc != 5) {
        fprintf(stderr, "usage: ops OPERATION WARMUP N KEY.pem\n");
        return 2;
    }
    for (size_t k = 0; k < sizeof(operations) / sizeof(operations[0]); k++)
        if (strcmp(argv[1], operations[k].name) == 0)
            op = &operations[k];
    warmup = strtol(argv[2], NULL, 10);
    n = strtol(argv[3], NULL, 10);
    if (op == NULL || warmup < 0 || n < 0) {
        fprintf(stderr, "ops: unknown operation %s or bad counts %s %s\n", argv[1], argv[2],
                argv[3]);
        return 2;
    }
    if ((file = fopen(argv[4], "r")) == NULL) {
        perror(argv[4]);
        return 2;
    }
    key = PEM_read_PrivateKey(file, NULL, NULL, NULL);
    fclose(file);
    if (key == NULL)
        goto done;
    memset(digest, 0x5a, sizeof(digest));
    digest_len = op->input_len != 0 ? op->input_len : 32;
    memset(message, 0xa5, sizeof(message));

    /* The input of a verification or decryption, made by the counterpart
     * operation in the same process (so also through the same provider). */
    if (op->kind == VERIFY || op->kind == DECRYPT) {
        int signature = op->kind == VERIFY;
        prep = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        if (prep == NULL || !init(prep, signature ? SIGN : ENCRYPT)
            || !configure(prep, op, signature))
            goto done;
        if (signature ? EVP_PKEY_sign(prep, input, &input_len, digest, digest_len) != 1
                      : EVP_PKEY_encrypt(prep, input, &input_len, message, sizeof(message)) != 1)
            goto done;
    }

    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    if (ctx == NULL || !init(ctx, op->kind) || !configure(ctx, op, op->kind <= VERIFY))
        goto done;
    for (i = 0; i < warmup + n; i++) {
        if (i == warmup)
            CALLGRIND_TOGGLE_COLLECT;
        output_len = sizeof(output);
        switch (op->kind) {
        case SIGN:
            if (EVP_PKEY_sign(ctx, output, &output_len, digest, digest_len) != 1)
                goto done;
            break;
        case VERIFY:
            if (EVP_PKEY_verify(ctx, input, input_len, digest, digest_len) != 1)
                goto done;
            break;
        case ENCRYPT:
            if (EVP_PKEY_encrypt(ctx, output, &output_len, message, sizeof(message)) != 1)
                goto done;
            break;
        case DECRYPT:
            if (EVP_PKEY_decrypt(ctx, output, &output_len, input, input_len) != 1
                || output_len != sizeof(message) || memcmp(output, message, sizeof(message)) != 0)
                goto done;
            break;
        }
    }
    if (n > 0)
        CALLGRIND_TOGGLE_COLLECT;
    printf("%s %ld\n", OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx)), n);
    status = 0;
done:
    if (status != 0)
        fprintf(stderr, "ops: %s failed after %ld operations\n", argv[1], i);
    EVP_PKEY_CTX_free(prep);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(key);
    return status;
}
