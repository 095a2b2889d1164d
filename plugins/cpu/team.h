/* How many primitive runs got a team and how many ran on one thread (team.c):
 * a census the tests read to check the team-sizing rule from outside a
 * run. Counted per run of a oneDNN primitive since the process started. */
#ifndef RUNNEL_PLUGINS_CPU_TEAM_H
#define RUNNEL_PLUGINS_CPU_TEAM_H

/* What ran: a node's primitive, a layout conversion's reorder (onednn.c),
 * a convolution's split epilogue (conv.c, weighted.c). */
typedef enum cpu_team_kind {
    CPU_TEAM_PRIMITIVE = 0,
    CPU_TEAM_REORDER = 1,
    CPU_TEAM_EPILOGUE = 2,
} cpu_team_kind;

typedef struct cpu_team_census {
    long long alone[3]; /* runs on one thread, by cpu_team_kind */
    long long team[3];  /* runs on a team of more */
} cpu_team_census;

/* Counts one run of `kind` on `threads` threads. */
void cpu_team_count(cpu_team_kind kind, int threads);
cpu_team_census cpu_team_census_read(void);

#endif /* RUNNEL_PLUGINS_CPU_TEAM_H */
