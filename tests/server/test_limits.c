/* runnel-server's budgets (server/limits.c): the file descriptors split
 * between connections and a reserve, and the bytes of requests held, taken
 * from many threads at once (tagged "concurrent": TSan runs it), and the
 * connections a front holds per client address. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/limits.h"

Test(fd_budget, raises_the_soft_limit_and_keeps_a_reserve)
{
    struct rlimit r;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
    if (r.rlim_max != RLIM_INFINITY && r.rlim_max < 512)
        cr_skip_test("RLIMIT_NOFILE's hard limit is %lu: too low to lower and raise",
                     (unsigned long)r.rlim_max);
    struct rlimit low = {256, r.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    server_fd_budget b;
    cr_assert_eq(server_fd_budget_raise(&b), RN_OK, "%s", rn_last_error());
    cr_assert_eq(b.before, 256);
    cr_assert_gt(b.soft, 256, "the soft limit was not raised");
    cr_assert_eq(b.soft, b.hard);
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
    cr_assert_eq((long)r.rlim_cur, b.soft);
    cr_assert_geq(b.reserve, 64);
    cr_assert_geq(b.reserve, b.soft / 8);
    cr_assert_eq(b.connections, b.soft - b.reserve);
}

Test(fd_budget, too_few_descriptors_is_an_error_naming_them)
{
    struct rlimit r, low = {40, 40};
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
    /* Lowering the hard limit cannot be undone: in a child process. */
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (setrlimit(RLIMIT_NOFILE, &low) != 0)
            _exit(2);
        server_fd_budget b = {0};
        rn_status st = server_fd_budget_raise(&b);
        _exit(st != RN_OK && b.soft == 0 && strstr(rn_last_error(), "only 40 file descriptors")
                  ? 0
                  : 1);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
}

Test(byte_budget, takes_up_to_the_limit_and_gives_back)
{
    server_byte_budget b = {.limit = 1000};
    cr_assert(server_byte_budget_take(&b, 600));
    cr_assert_not(server_byte_budget_take(&b, 401), "past the limit");
    cr_assert(server_byte_budget_take(&b, 400));
    cr_assert_not(server_byte_budget_take(&b, 1));
    server_byte_budget_give(&b, 600);
    cr_assert(server_byte_budget_take(&b, 600));
    cr_assert_not(server_byte_budget_take(&b, SIZE_MAX), "a huge size must not wrap");
    server_byte_budget none = {.limit = 0};
    cr_assert(server_byte_budget_take(&none, SIZE_MAX), "limit 0: no limit");
    cr_assert(server_byte_budget_take(NULL, 5), "no budget: no limit");
}

enum { THREADS = 8, ROUNDS = 20000, LIMIT = 5 * 64 };

static void *take_and_give(void *arg)
{
    server_byte_budget *b = arg;
    long refused = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (server_byte_budget_take(b, 64)) {
            size_t held = atomic_load(&b->held);
            if (held > LIMIT)
                return (void *)-1L; /* seen over the limit */
            server_byte_budget_give(b, 64);
        } else {
            refused++;
        }
    }
    return (void *)refused;
}

Test(byte_budget, never_over_the_limit_from_many_threads)
{
    /* 8 threads wanting 64 bytes each, room for 5: some are refused, the
     * limit is never passed, and everything comes back. */
    server_byte_budget b = {.limit = LIMIT};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, take_and_give, &b), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_neq((long)r, -1L, "held more than the limit");
    }
    cr_assert_eq(atomic_load(&b.held), 0);
}

/* ---- connections by client address ---- */

static struct sockaddr_in from(const char *dotted)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40000)};
    cr_assert_eq(inet_pton(AF_INET, dotted, &a.sin_addr), 1);
    return a;
}

#define SA(a) ((const struct sockaddr *)(const void *)&(a))

Test(conn_table, refuses_past_the_per_client_limit_and_admits_again_once_one_closes)
{
    server_conn_table *t;
    cr_assert_eq(server_conn_table_create(100, 3, &t), RN_OK);
    struct sockaddr_in a = from("10.0.0.1"), b = from("10.0.0.2");
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = dup(STDERR_FILENO);
        cr_assert_geq(fds[i], 0);
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(server_conn_table_admit(t, fds[i], SA(a)), SERVER_CONN_ADMITTED);
    cr_assert_eq(server_conn_table_admit(t, fds[3], SA(a)), SERVER_CONN_CLIENT_FULL);
    cr_assert_eq(server_conn_table_admit(t, fds[3], SA(b)), SERVER_CONN_ADMITTED,
                 "another address has its own share");
    cr_assert_eq(server_conn_table_count(t, SA(a)), 3);
    /* Its owner closes one of a's: the table finds it gone by itself. */
    close(fds[1]);
    cr_assert_eq(server_conn_table_count(t, SA(a)), 2);
    int again = dup(STDERR_FILENO);
    cr_assert_eq(server_conn_table_admit(t, again, SA(a)), SERVER_CONN_ADMITTED);
    cr_assert_eq(server_conn_table_count(t, NULL), 4);
    server_conn_table_free(t);
    close(fds[0]);
    close(fds[2]);
    close(fds[3]);
    close(again);
}

Test(conn_table, a_descriptor_number_reused_after_a_close_is_a_new_connection)
{
    server_conn_table *t;
    cr_assert_eq(server_conn_table_create(100, 1, &t), RN_OK);
    struct sockaddr_in a = from("10.0.0.1");
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    cr_assert_eq(server_conn_table_admit(t, sv[0], SA(a)), SERVER_CONN_ADMITTED);
    int number = sv[0];
    close(sv[0]); /* closed by its owner, and the number taken by another socket */
    int sv2[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
    cr_assert_eq(sv2[0], number, "the kernel gives the lowest free number");
    cr_assert_eq(server_conn_table_count(t, SA(a)), 0,
                 "the same number on another socket is not the connection recorded");
    cr_assert_eq(server_conn_table_admit(t, sv2[0], SA(a)), SERVER_CONN_ADMITTED);
    cr_assert_eq(server_conn_table_count(t, SA(a)), 1);
    server_conn_table_free(t);
    close(sv[1]);
    close(sv2[0]);
    close(sv2[1]);
}

Test(conn_table, refuses_past_the_total_limit_over_every_address)
{
    server_conn_table *t;
    cr_assert_eq(server_conn_table_create(4, 4, &t), RN_OK);
    char dotted[32];
    int fds[5];
    for (int i = 0; i < 5; i++) {
        fds[i] = dup(STDERR_FILENO);
        snprintf(dotted, sizeof dotted, "10.0.1.%d", i + 1);
        struct sockaddr_in a = from(dotted);
        cr_assert_eq(server_conn_table_admit(t, fds[i], SA(a)),
                     i < 4 ? SERVER_CONN_ADMITTED : SERVER_CONN_TABLE_FULL, "connection %d", i);
    }
    close(fds[0]);
    struct sockaddr_in a = from("10.0.1.5");
    cr_assert_eq(server_conn_table_admit(t, fds[4], SA(a)), SERVER_CONN_ADMITTED,
                 "room again once one has closed");
    cr_assert_eq(server_conn_table_admit(t, -1, SA(a)), SERVER_CONN_TABLE_FULL);
    server_conn_table_free(t);
    for (int i = 1; i < 5; i++)
        close(fds[i]);
}

Test(conn_table, a_descriptor_that_is_not_open_is_refused)
{
    server_conn_table *t;
    cr_assert_eq(server_conn_table_create(4, 4, &t), RN_OK);
    struct sockaddr_in a = from("10.0.0.1");
    cr_assert_eq(server_conn_table_admit(t, 100000, SA(a)), SERVER_CONN_ERROR);
    cr_assert_eq(server_conn_table_count(t, NULL), 0);
    server_conn_table_free(t);
}
