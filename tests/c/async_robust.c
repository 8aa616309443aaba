/*
 * What an application may do with ASYNC jobs and wait contexts, and what
 * rustica must survive (each mode reproduces one finding of the async
 * review; docs/architecture.md, "Asynchronous offload"):
 *
 *   async_robust CONFIG KEY MODE [N]
 *
 *   shared N   N jobs on ONE wait context, each signing (PKCS#1 v1.5,
 *              SHA-256) and then verifying inside the job; the jobs are
 *              resumed in a shuffled order whenever the wait fd is
 *              readable. Every in-job verification must succeed and every
 *              signature must verify outside too.
 *   errqueue   the thread's error queue across pauses: job A decrypts a
 *              good OAEP ciphertext, job B a bad one, both paused at once;
 *              after A finishes the queue must be empty, after B it must
 *              hold B's error. Then one job with the bad ciphertext, whose
 *              application clears the queue while it is paused: the
 *              decryption must fail with its error on the queue.
 *   forkcb     callback mode: the application's callback sleeps 2 s; the
 *              process forks while an offload thread is inside it, and the
 *              child frees its copy of the wait context (under a 5 s alarm).
 *   forkfd     a wait context that rustica already used; after a fork, the
 *              child signs in a job on its inherited copy: the operation
 *              must finish without pausing (the eventfd is the parent's),
 *              and the parent's next job on the same context still works.
 *   sigmask    after an asynchronous operation, every rustica-async thread
 *              must have the common process-directed signals blocked.
 *   freed N    N requests whose wait context goes while they are in flight:
 *              freed by the application at the job's first pause, or the
 *              starting thread exits with the job paused and the context is
 *              freed later; then one more operation must still work.
 *   fdcap N    with a descriptor limit of 64, N wait contexts that each ran
 *              one job and stay alive (an event loop's idle connections):
 *              rustica's eventfds must stay within half the limit, and the
 *              application must still be able to open files.
 *   exit N     N jobs paused with requests in flight, then exit(0) at once
 *              (atexit handlers, library destructors, threads still inside
 *              the adapter): the process must end cleanly.
 *   cblock     callback mode, an application whose callback takes a lock L
 *              of its own (posting to an event queue): with the signature's
 *              completion waiting for L, the application frees the paused
 *              job's wait context while holding L. ASYNC_WAIT_CTX_free must
 *              return (a 5 s watchdog fails the run).
 *   genabandon N  N key generations of KEY's size, each in a job given up
 *              at its first pause: the wait context is freed, then the key
 *              and the whole library context, and the process goes on for
 *              a while (run under valgrind: nothing may touch the freed
 *              context).
 *   genexit N  N key generations paused in their jobs, then exit(0) at once:
 *              OPENSSL_cleanup runs while they are in flight.
 *
 * Prints "paused N" where jobs pause. Exit 0 = every check passed.
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/async.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#define MAX_JOBS 1024

static OSSL_LIB_CTX *lib;
static EVP_PKEY *key;

static int fail(const char *what)
{
    fprintf(stderr, "async_robust: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    return 0;
}

static int by_rustica(EVP_PKEY_CTX *ctx)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);

    return p != NULL && strcmp(OSSL_PROVIDER_get0_name(p), "rustica") == 0;
}

struct op {
    int decrypt;               /* 0 sign (+ verify), 1 OAEP decrypt */
    unsigned char in[1024];
    size_t inlen;
    unsigned char out[1024];
    size_t outlen;
    int ok;                    /* the operation's return */
    int verified;              /* sign: verified inside the job */
};

static int sign(struct op *o)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    int ok;

    o->outlen = sizeof(o->out);
    ok = ctx != NULL && EVP_PKEY_sign_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
        && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_sign(ctx, o->out, &o->outlen, o->in, 32) == 1
        && by_rustica(ctx);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static int verify(const struct op *o)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    int ok;

    ok = ctx != NULL && EVP_PKEY_verify_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
        && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_verify(ctx, o->out, o->outlen, o->in, 32) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static int oaep(int decrypt, const unsigned char *in, size_t inlen,
                unsigned char *out, size_t *outlen)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    int ok;

    ok = ctx != NULL
        && (decrypt ? EVP_PKEY_decrypt_init(ctx) : EVP_PKEY_encrypt_init(ctx)) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
        && (decrypt ? EVP_PKEY_decrypt(ctx, out, outlen, in, inlen)
                    : EVP_PKEY_encrypt(ctx, out, outlen, in, inlen)) == 1
        && by_rustica(ctx);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static int job_main(void *arg)
{
    struct op *o = *(struct op **)arg;

    if (o->decrypt) {
        o->outlen = sizeof(o->out);
        o->ok = oaep(1, o->in, o->inlen, o->out, &o->outlen);
    } else {
        memset(o->in, 0x5a, 32);
        o->in[0] = (unsigned char)rand();
        o->ok = sign(o);
        o->verified = o->ok && verify(o);
    }
    return o->ok;
}

/* Starts or resumes a job: 1 finished, 0 paused, -1 error. */
static int step(ASYNC_JOB **job, ASYNC_WAIT_CTX *w, struct op *o)
{
    int ret = 0;

    switch (ASYNC_start_job(job, w, &ret, job_main, &o, sizeof(o))) {
    case ASYNC_FINISH:
        *job = NULL;
        return 1;
    case ASYNC_PAUSE:
        return 0;
    case ASYNC_NO_JOBS:
        return 0;
    default:
        return -1;
    }
}

/* Waits up to `ms` for any of w's fds. */
static void wait_fds(ASYNC_WAIT_CTX *w, int ms)
{
    OSSL_ASYNC_FD fds[8];
    struct pollfd p[8];
    size_t n = 0, i;

    if (!ASYNC_WAIT_CTX_get_all_fds(w, NULL, &n) || n == 0 || n > 8) {
        usleep(1000);
        return;
    }
    ASYNC_WAIT_CTX_get_all_fds(w, fds, &n);
    for (i = 0; i < n; i++) {
        p[i].fd = fds[i];
        p[i].events = POLLIN;
    }
    poll(p, n, ms);
}

static int shared(int n)
{
    static ASYNC_JOB *jobs[MAX_JOBS];
    static struct op ops[MAX_JOBS];
    static int order[MAX_JOBS];
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    int i, left = n, paused = 0, ok = 1;

    if (w == NULL)
        return fail("ASYNC_WAIT_CTX_new");
    srand(12345);
    for (i = 0; i < n; i++) {
        int r;

        order[i] = i;
        r = step(&jobs[i], w, &ops[i]);
        if (r < 0)
            return fail("ASYNC_start_job");
        if (r == 1)
            left--;
        else
            paused++;
    }
    while (left > 0) {
        wait_fds(w, 100);
        for (i = n - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        for (i = 0; i < n; i++) {
            int k = order[i], r;

            if (jobs[k] == NULL)
                continue;
            r = step(&jobs[k], w, &ops[k]);
            if (r < 0)
                return fail("ASYNC_start_job (resume)");
            if (r == 1)
                left--;
        }
    }
    for (i = 0; i < n; i++) {
        if (!ops[i].ok) {
            fprintf(stderr, "job %d: the signature failed\n", i);
            ok = 0;
        } else if (!ops[i].verified) {
            fprintf(stderr, "job %d: its own signature did not verify inside the job\n", i);
            ok = 0;
        } else if (!verify(&ops[i])) {
            fprintf(stderr, "job %d: the signature does not verify\n", i);
            ok = 0;
        }
    }
    ASYNC_WAIT_CTX_free(w);
    printf("paused %d\n", paused);
    return ok ? 1 : fail("a shared wait context");
}

/* A good OAEP ciphertext and a bad one (a valid exponentiation input
 * whose padding is wrong: the good one with its last byte changed). */
static unsigned char good_ct[1024], bad_ct[1024];
static size_t ctlen;

static int make_ciphertexts(void)
{
    unsigned char msg[32];

    memset(msg, 0x33, sizeof(msg));
    ctlen = sizeof(good_ct);
    if (!oaep(0, msg, sizeof(msg), good_ct, &ctlen))
        return fail("OAEP encryption");
    memcpy(bad_ct, good_ct, ctlen);
    bad_ct[ctlen - 1] ^= 0x01;
    return 1;
}

static int run_to_end(ASYNC_JOB **job, ASYNC_WAIT_CTX *w, struct op *o)
{
    int r;

    while ((r = step(job, w, o)) == 0)
        wait_fds(w, 100);
    return r == 1;
}

static int errqueue(void)
{
    ASYNC_JOB *ja = NULL, *jb = NULL;
    ASYNC_WAIT_CTX *wa = ASYNC_WAIT_CTX_new(), *wb = ASYNC_WAIT_CTX_new();
    static struct op a, b, c;
    unsigned long e;
    int ok = 1;

    if (wa == NULL || wb == NULL || !make_ciphertexts())
        return 0;
    /* A first asynchronous operation (a signature) sets up the offload
     * pool, so that the decryptions' jobs carry only their own work on
     * their small stacks (sanitizer builds have no room for more). */
    if (!run_to_end(&ja, wa, &c) || !c.verified)
        return fail("a first asynchronous signature");
    memset(&c, 0, sizeof(c));
    ERR_clear_error();
    a.decrypt = b.decrypt = c.decrypt = 1;
    memcpy(a.in, good_ct, ctlen);
    memcpy(b.in, bad_ct, ctlen);
    memcpy(c.in, bad_ct, ctlen);
    a.inlen = b.inlen = c.inlen = ctlen;
    /* Both paused at once, as two connections of one event loop. */
    if (step(&ja, wa, &a) != 0 || step(&jb, wb, &b) != 0)
        return fail("pausing both decryptions (is the adapter's latency set?)");
    if (!run_to_end(&ja, wa, &a) || !a.ok)
        return fail("the good decryption");
    if ((e = ERR_peek_error()) != 0) {
        fprintf(stderr, "after the good decryption succeeded, the queue holds: %s\n",
                ERR_error_string(e, NULL));
        ok = 0;
    }
    if (!run_to_end(&jb, wb, &b))
        return fail("running the bad decryption");
    if (b.ok) {
        fprintf(stderr, "the bad decryption succeeded\n");
        ok = 0;
    } else if (ERR_peek_error() == 0) {
        fprintf(stderr, "the bad decryption failed with nothing on the queue\n");
        ok = 0;
    }
    ERR_clear_error();

    /* The application clears the queue while the job is paused. */
    ja = NULL;
    if (step(&ja, wa, &c) != 0)
        return fail("pausing the bad decryption");
    ERR_clear_error();
    if (!run_to_end(&ja, wa, &c))
        return fail("running the bad decryption");
    if (c.ok) {
        fprintf(stderr, "the bad decryption succeeded\n");
        ok = 0;
    } else if (ERR_peek_error() == 0) {
        fprintf(stderr, "the bad decryption failed with an empty queue "
                "(the queue was cleared while it was paused)\n");
        ok = 0;
    }
    ERR_clear_error();
    ASYNC_WAIT_CTX_free(wa);
    ASYNC_WAIT_CTX_free(wb);
    return ok;
}

static volatile sig_atomic_t in_callback, callbacks;

static int slow_callback(void *arg)
{
    (void)arg;
    in_callback = 1;
    sleep(2);
    callbacks++;
    in_callback = 0;
    return 1;
}

static int forkcb(void)
{
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    static struct op o;
    int status = 0, waited = 0;
    pid_t pid;

    if (w == NULL || !ASYNC_WAIT_CTX_set_callback(w, slow_callback, NULL))
        return fail("a wait context with a callback");
    if (step(&job, w, &o) != 0)
        return fail("pausing the signature");
    while (!in_callback && waited++ < 5000)
        usleep(1000);
    if (!in_callback)
        return fail("waiting for the callback");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        alarm(5);
        ASYNC_WAIT_CTX_free(w);
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return fail("fork");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child's ASYNC_WAIT_CTX_free did not return (status %d%s)\n",
                status, WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
                ? ", killed by its alarm" : "");
        return 0;
    }
    while (callbacks == 0)
        usleep(1000);
    if (!run_to_end(&job, w, &o) || !o.ok || !o.verified)
        return fail("the parent's signature");
    ASYNC_WAIT_CTX_free(w);
    return 1;
}

static int forkfd(void)
{
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    static struct op o;
    int status = 0;
    size_t nfds = 0;
    pid_t pid;

    if (w == NULL)
        return 0;
    if (step(&job, w, &o) != 0)
        return fail("pausing the first signature");
    if (!run_to_end(&job, w, &o) || !o.verified)
        return fail("the first signature");
    if (!ASYNC_WAIT_CTX_get_all_fds(w, NULL, &nfds) || nfds != 1)
        return fail("rustica's wait fd on the context");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int r;

        alarm(20);
        memset(&o, 0, sizeof(o));
        job = NULL;
        r = step(&job, w, &o);
        if (r != 1) {
            fprintf(stderr, "child: a job on the inherited wait context paused "
                    "(it would wait on the parent's eventfd)\n");
            _exit(1);
        }
        _exit(o.ok && o.verified ? 0 : 2);
    }
    memset(&o, 0, sizeof(o));
    job = NULL;
    if (pid < 0 || !run_to_end(&job, w, &o) || !o.verified)
        return fail("the parent's signature after the fork");
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child failed (status %d)\n", status);
        return 0;
    }
    ASYNC_WAIT_CTX_free(w);
    return 1;
}

static int offload_signal_mask(void)
{
    static const int sigs[] = { SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
                                SIGTERM, SIGCHLD };
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    static struct op o;
    DIR *d;
    struct dirent *e;
    int found = 0, ok = 1;

    if (w == NULL || !run_to_end(&job, w, &o) || !o.verified)
        return fail("an asynchronous signature");
    d = opendir("/proc/self/task");
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], line[256], comm[64] = "";
        FILE *f;
        unsigned long long blocked = 0;
        size_t i;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f) == NULL)
            comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "rustica-async", 13) != 0)
            continue;
        found++;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof(line), f) != NULL)
            if (strncmp(line, "SigBlk:", 7) == 0)
                blocked = strtoull(line + 7, NULL, 16);
        fclose(f);
        for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            if (!(blocked & (1ULL << (sigs[i] - 1)))) {
                fprintf(stderr, "thread %s (rustica-async) accepts signal %d (SigBlk %llx)\n",
                        e->d_name, sigs[i], blocked);
                ok = 0;
            }
    }
    if (d != NULL)
        closedir(d);
    printf("async threads %d\n", found);
    ASYNC_WAIT_CTX_free(w);
    if (found == 0)
        return fail("finding an offload thread");
    return ok;
}

struct starter {
    ASYNC_WAIT_CTX *w;
    struct op o;
    int paused;
};

/* Starts a job and ends the thread with the job paused. */
static void *start_and_exit(void *arg)
{
    struct starter *s = arg;
    ASYNC_JOB *job = NULL;

    s->paused = step(&job, s->w, &s->o) == 0;
    OPENSSL_thread_stop();
    return NULL;
}

static int freed(int n)
{
    int i, paused = 0;
    static struct op last;
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *w;

    for (i = 0; i < n; i++) {
        struct starter s;

        memset(&s, 0, sizeof(s));
        if ((s.w = ASYNC_WAIT_CTX_new()) == NULL)
            return fail("ASYNC_WAIT_CTX_new");
        if (i % 2 == 0) {
            ASYNC_JOB *j = NULL;

            s.paused = step(&j, s.w, &s.o) == 0;
        } else {
            pthread_t t;

            if (pthread_create(&t, NULL, start_and_exit, &s) != 0
                || pthread_join(t, NULL) != 0)
                return fail("a thread that starts a job");
        }
        paused += s.paused;
        /* The job is abandoned: its wait context goes, in flight or not. */
        ASYNC_WAIT_CTX_free(s.w);
    }
    printf("paused %d\n", paused);
    w = ASYNC_WAIT_CTX_new();
    if (w == NULL || !run_to_end(&job, w, &last) || !last.verified)
        return fail("an operation after the freed ones");
    ASYNC_WAIT_CTX_free(w);
    return 1;
}

static int fdcap(int n)
{
    static ASYNC_WAIT_CTX *w[MAX_JOBS];
    static struct op ops[MAX_JOBS];
    struct rlimit lim = { 64, 64 };
    FILE *files[16];
    int i, with_fd = 0, opened = 0, ok = 1;

    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
        return fail("setrlimit");
    for (i = 0; i < n; i++) {
        ASYNC_JOB *job = NULL;
        size_t nfds = 0;

        if ((w[i] = ASYNC_WAIT_CTX_new()) == NULL)
            return fail("ASYNC_WAIT_CTX_new");
        if (!run_to_end(&job, w[i], &ops[i]) || !ops[i].verified) {
            fprintf(stderr, "operation %d failed\n", i);
            ok = 0;
        }
        if (ASYNC_WAIT_CTX_get_all_fds(w[i], NULL, &nfds) && nfds > 0)
            with_fd++;
    }
    for (i = 0; i < 16; i++)
        if ((files[i] = fopen("/dev/null", "r")) != NULL)
            opened++;
    printf("eventfds %d\nopened %d\n", with_fd, opened);
    for (i = 0; i < 16; i++)
        if (files[i] != NULL)
            fclose(files[i]);
    for (i = 0; i < n; i++)
        ASYNC_WAIT_CTX_free(w[i]);
    if (with_fd > 32 || opened < 16) {
        fprintf(stderr, "rustica holds %d eventfds under a limit of 64; "
                "the application could open %d of 16 files\n", with_fd, opened);
        ok = 0;
    }
    return ok;
}

static int exit_in_flight(int n)
{
    static ASYNC_JOB *jobs[MAX_JOBS];
    static ASYNC_WAIT_CTX *w[MAX_JOBS];
    static struct op ops[MAX_JOBS];
    int i, paused = 0;

    for (i = 0; i < n; i++) {
        if ((w[i] = ASYNC_WAIT_CTX_new()) == NULL)
            return fail("ASYNC_WAIT_CTX_new");
        paused += step(&jobs[i], w[i], &ops[i]) == 0;
    }
    printf("paused %d\n", paused);
    fflush(stdout);
    exit(paused > 0 ? 0 : 3);
}

static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int app_callbacks;

/* The application's callback: posts to its event queue under its lock. */
static int locking_callback(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&app_lock);
    app_callbacks++;
    pthread_mutex_unlock(&app_lock);
    return 1;
}

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(5);
    fprintf(stderr, "ASYNC_WAIT_CTX_free did not return in 5 s\n");
    _exit(1);
    return NULL;
}

static int cblock(void)
{
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    static struct op o;
    pthread_t dog;

    if (w == NULL || !ASYNC_WAIT_CTX_set_callback(w, locking_callback, NULL))
        return fail("a wait context with a callback");
    if (step(&job, w, &o) != 0)
        return fail("pausing the signature");
    printf("paused 1\n");
    pthread_mutex_lock(&app_lock);
    /* The adapter answers meanwhile; its completion waits for app_lock. */
    usleep(500 * 1000);
    if (pthread_create(&dog, NULL, watchdog, NULL) != 0)
        return fail("the watchdog");
    ASYNC_WAIT_CTX_free(w);
    pthread_mutex_unlock(&app_lock);
    printf("freed\n");
    /* The job is given up; the completion's callback may still run. */
    usleep(200 * 1000);
    return 1;
}

/* A key generation of the key's size, inside a job. */
static int gen_main(void *arg)
{
    int bits = **(int **)arg;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(lib, "RSA", NULL);
    EVP_PKEY *k = NULL;
    int ok;

    ok = ctx != NULL && EVP_PKEY_keygen_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) == 1
        && EVP_PKEY_generate(ctx, &k) == 1
        && by_rustica(ctx);
    EVP_PKEY_free(k);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

/* Starts n key generations, each on its own wait context; returns how
 * many paused (their jobs and contexts in jobs[] and w[]). */
static int start_generations(int n, ASYNC_JOB **jobs, ASYNC_WAIT_CTX **w)
{
    static int bits;
    int *arg = &bits, i, paused = 0, ret;

    bits = EVP_PKEY_get_bits(key);
    for (i = 0; i < n; i++) {
        if ((w[i] = ASYNC_WAIT_CTX_new()) == NULL)
            return fail("ASYNC_WAIT_CTX_new");
        switch (ASYNC_start_job(&jobs[i], w[i], &ret, gen_main, &arg, sizeof(arg))) {
        case ASYNC_PAUSE:
            paused++;
            break;
        case ASYNC_FINISH:
            jobs[i] = NULL;
            if (!ret)
                return fail("a key generation in its job");
            break;
        default:
            return fail("ASYNC_start_job");
        }
    }
    printf("paused %d\n", paused);
    fflush(stdout);
    return paused;
}

static int genabandon(int n)
{
    static ASYNC_JOB *jobs[MAX_JOBS];
    static ASYNC_WAIT_CTX *w[MAX_JOBS];
    int i, paused = start_generations(n, jobs, w);

    /* Given up: the wait contexts, the key, then the library context. */
    for (i = 0; i < n; i++)
        ASYNC_WAIT_CTX_free(w[i]);
    EVP_PKEY_free(key);
    key = NULL;
    OSSL_LIB_CTX_free(lib);
    lib = NULL;
    /* Whatever rustica still runs for those jobs runs now. */
    sleep(3);
    return paused == n;
}

static int genexit(int n)
{
    static ASYNC_JOB *jobs[MAX_JOBS];
    static ASYNC_WAIT_CTX *w[MAX_JOBS];
    int paused = start_generations(n, jobs, w);

    exit(paused == n ? 0 : 3);
}

int main(int argc, char **argv)
{
    BIO *bio;
    const char *mode;
    int n, ok;

    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: async_robust CONFIG KEY MODE [N]\n");
        return 2;
    }
    mode = argv[3];
    n = argc == 5 ? atoi(argv[4]) : 1;
    if (n < 1 || n > MAX_JOBS)
        return 2;
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1]))
        return fail("loading the configuration") ? 0 : 1;
    bio = BIO_new_file(argv[2], "r");
    if (bio != NULL)
        key = PEM_read_bio_PrivateKey_ex(bio, NULL, NULL, NULL, lib, NULL);
    BIO_free(bio);
    if (key == NULL)
        return fail("reading the key") ? 0 : 1;
    /* One signature and one decryption outside any job first, as a server
     * uses its key before it serves: the key's import into rustica and the
     * first draws from the context's generators run on this thread's
     * stack, not on a job's 32 KiB one (too small for them in sanitizer
     * builds). */
    {
        static struct op warm;

        unsigned char ct[1024];
        size_t ctlen = sizeof(ct);

        memset(warm.in, 0x77, 32);
        if (!sign(&warm) || !verify(&warm))
            return fail("a signature outside the jobs") ? 0 : 1;
        /* And a decryption: its first use of the context's generators. */
        warm.outlen = sizeof(warm.out);
        if (!oaep(0, warm.in, 32, ct, &ctlen) || !oaep(1, ct, ctlen, warm.out, &warm.outlen))
            return fail("a decryption outside the jobs") ? 0 : 1;
    }

    if (strcmp(mode, "shared") == 0)
        ok = shared(n);
    else if (strcmp(mode, "errqueue") == 0)
        ok = errqueue();
    else if (strcmp(mode, "forkcb") == 0)
        ok = forkcb();
    else if (strcmp(mode, "forkfd") == 0)
        ok = forkfd();
    else if (strcmp(mode, "sigmask") == 0)
        ok = offload_signal_mask();
    else if (strcmp(mode, "freed") == 0)
        ok = freed(n);
    else if (strcmp(mode, "fdcap") == 0)
        ok = fdcap(n);
    else if (strcmp(mode, "exit") == 0)
        ok = exit_in_flight(n);
    else if (strcmp(mode, "cblock") == 0)
        ok = cblock();
    else if (strcmp(mode, "genabandon") == 0)
        ok = genabandon(n);
    else if (strcmp(mode, "genexit") == 0)
        ok = genexit(n);
    else
        return 2;
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
