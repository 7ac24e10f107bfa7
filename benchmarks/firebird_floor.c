/* The least CPU a client can spend on the agent's Firebird transactions.
 *
 * select-update's and tpcb's transactions, statement for statement and round trip for
 * round trip as the agent runs them (start, the statements as singleton executes,
 * commit), through Firebird's documented ISC API (ibase.h) and nothing else: each
 * statement prepared once, its parameters and its row in XSQLDA buffers set up once,
 * a transaction costing only the library's calls and the arithmetic of the next key.
 * An update conflict is rolled back and retried with the same values, as the agent.
 *
 *   ISC_USER=… ISC_PASSWORD=… firebird_floor DATABASE select-update|tpcb CLIENTS SECONDS SIZE
 *
 * (SIZE: select-update's rows, tpcb's scale) forks CLIENTS processes, each with its own
 * attachment, and prints one line: "committed retries". The caller (firebird_floor.py)
 * reads the CPU from outside.
 */
#include <ibase.h>
#include <iberror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PARAMS 4

typedef struct {
    isc_stmt_handle handle;
    XSQLDA *in;
    XSQLDA *out;
    int params[MAX_PARAMS];
    int row;
} statement;

static ISC_STATUS status[20];

static void fail(const char *what) {
    const ISC_STATUS *vector = status;
    char message[512];
    fprintf(stderr, "%s:", what);
    while (fb_interpret(message, sizeof message, &vector)) fprintf(stderr, " %s", message);
    fputc('\n', stderr);
    exit(2);
}

static XSQLDA *sqlda(int fields) {
    XSQLDA *found = calloc(1, XSQLDA_LENGTH(fields));
    found->version = SQLDA_VERSION1;
    found->sqln = (short)fields;
    return found;
}

/* Every parameter and column an INTEGER without a null indicator: the server converts
 * to the column's type, as it does the agent's integers. */
static void bind(XSQLDA *area, int *values) {
    for (int i = 0; i < area->sqld; i++) {
        area->sqlvar[i].sqltype = SQL_LONG;
        area->sqlvar[i].sqlscale = 0;
        area->sqlvar[i].sqllen = sizeof(int);
        area->sqlvar[i].sqldata = (char *)&values[i];
        area->sqlvar[i].sqlind = NULL;
    }
}

static void prepare(isc_db_handle *db, isc_tr_handle *tr, statement *s, const char *sql) {
    s->handle = 0;
    if (isc_dsql_allocate_statement(status, db, &s->handle)) fail("allocate");
    s->out = sqlda(1);
    if (isc_dsql_prepare(status, tr, &s->handle, 0, sql, SQL_DIALECT_V6, s->out)) fail(sql);
    s->in = sqlda(MAX_PARAMS);
    if (isc_dsql_describe_bind(status, &s->handle, SQL_DIALECT_V6, s->in)) fail("describe");
    bind(s->in, s->params);
    bind(s->out, &s->row);
}

static int run(isc_tr_handle *tr, statement *s) {
    return isc_dsql_execute2(status, tr, &s->handle, SQL_DIALECT_V6, s->in,
                             s->out->sqld ? s->out : NULL) == 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static const char *SELECT_UPDATE[] = {
    "SELECT c2 FROM benchhub_select_update WHERE c1 = ? WITH LOCK",
    "UPDATE benchhub_select_update SET c2 = ? WHERE c1 = ?",
};
static const char *TPCB[] = {
    "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
    "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
    "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?",
    "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
    " VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
};

static void client(int index, const char *database, int tpcb, double seconds, int size,
                   int out) {
    /* The user and password: the library's own ISC_USER and ISC_PASSWORD. */
    static char dpb[] = {isc_dpb_version1, isc_dpb_lc_ctype, 4, 'U', 'T', 'F', '8'};
    /* READ COMMITTED (record version), waiting for locks: the agent's transactions. */
    static char tpb[] = {isc_tpb_version3, isc_tpb_write, isc_tpb_read_committed,
                         isc_tpb_rec_version, isc_tpb_wait};
    isc_db_handle db = 0;
    isc_tr_handle tr = 0;
    if (isc_attach_database(status, 0, database, &db, sizeof dpb, dpb)) fail("attach");
    if (isc_start_transaction(status, &tr, 1, &db, sizeof tpb, tpb)) fail("start");
    int count = tpcb ? 5 : 2;
    statement s[5];
    for (int i = 0; i < count; i++) prepare(&db, &tr, &s[i], (tpcb ? TPCB : SELECT_UPDATE)[i]);
    if (isc_commit_transaction(status, &tr)) fail("commit");
    unsigned seed = 12345u + (unsigned)index * 7919u;
    long committed = 0, retries = 0;
    double deadline = now() + seconds;
    while (now() < deadline) {
        int key = 0, aid = 0, bid = 0, tid = 0, delta = 0;
        if (tpcb) {
            aid = rand_r(&seed) % (100000 * size) + 1, bid = rand_r(&seed) % size + 1;
            tid = rand_r(&seed) % (10 * size) + 1, delta = rand_r(&seed) % 10001 - 5000;
        } else {
            key = rand_r(&seed) % size + 1;
        }
        for (;;) {
            int ok = isc_start_transaction(status, &tr, 1, &db, sizeof tpb, tpb) == 0;
            if (!ok) fail("start");
            if (tpcb) {
                s[0].params[0] = delta, s[0].params[1] = aid;
                s[1].params[0] = aid;
                s[2].params[0] = delta, s[2].params[1] = tid;
                s[3].params[0] = delta, s[3].params[1] = bid;
                s[4].params[0] = tid, s[4].params[1] = bid, s[4].params[2] = aid;
                s[4].params[3] = delta;
                for (int i = 0; ok && i < 5; i++) ok = run(&tr, &s[i]);
            } else {
                s[0].params[0] = key;
                ok = run(&tr, &s[0]);
                if (ok) {
                    s[1].params[0] = s[0].row + 1, s[1].params[1] = key;
                    ok = run(&tr, &s[1]);
                }
            }
            if (ok && isc_commit_transaction(status, &tr) == 0) {
                committed++;
                break;
            }
            long code = status[1];
            ISC_STATUS_ARRAY spare;
            if (tr) isc_rollback_transaction(spare, &tr);
            if (code != isc_deadlock && code != isc_lock_conflict && code != isc_update_conflict)
                fail("transaction");
            retries++;
        }
    }
    for (int i = 0; i < count; i++) isc_dsql_free_statement(status, &s[i].handle, DSQL_drop);
    isc_detach_database(status, &db);
    char line[64];
    int length = snprintf(line, sizeof line, "%ld %ld\n", committed, retries);
    if (write(out, line, length) != length) exit(3);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s DATABASE select-update|tpcb CLIENTS SECONDS SIZE\n", argv[0]);
        return 1;
    }
    int tpcb = strcmp(argv[2], "tpcb") == 0, clients = atoi(argv[3]), size = atoi(argv[5]);
    double seconds = atof(argv[4]);
    int pipes[2];
    if (pipe(pipes)) return 1;
    for (int i = 0; i < clients; i++) {
        if (fork() == 0) {
            close(pipes[0]);
            client(i, argv[1], tpcb, seconds, size, pipes[1]);
            _exit(0);
        }
    }
    close(pipes[1]);
    long committed = 0, retries = 0, c, r;
    FILE *answers = fdopen(pipes[0], "r");
    while (fscanf(answers, "%ld %ld", &c, &r) == 2) committed += c, retries += r;
    int failed = 0, wstatus;
    while (wait(&wstatus) > 0) failed |= !WIFEXITED(wstatus) || WEXITSTATUS(wstatus);
    printf("%ld %ld\n", committed, retries);
    return failed ? 2 : 0;
}
