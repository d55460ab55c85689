/*  fq_cell.c — creating, starting and retiring actor cells. */
#include "fq_actor_internal.h"

//  The actor thread's body; defined in fq_actor.c.
void fq_actor_main(zsock_t *pipe, void *args);

int fq_cell_new(fq_system_t *sys, const char *parent_path, const char *name,
                const fq_behaviour_t *behaviour, void *args, const fq_spawn_opts_t *opts,
                bool guardian, fq_cell_t **cell_p)
{
    fq_spawn_opts_t defaults = fq_spawn_opts_default();
    if (!opts)
        opts = &defaults;
    int rc = 0;
    fq_cell_t *cell = NULL;
    //  Built here, its length checked by snprintf's result: GCC's
    //  -Wformat-truncation (an error at -O2 and up) cannot see a strlen check
    char path[FQ_PATH_MAX + 1];
    if (!fq_name_valid(name) || !behaviour || !behaviour->receive ||
        snprintf(path, sizeof path, "%s/%s", parent_path, name) >= (int)sizeof path ||
        opts->supervision.max_restarts < 0)
        rc = FQ_EINVAL;
    else if (!(cell = calloc(1, sizeof *cell)))
        rc = FQ_ENOMEM;
    if (rc) {
        if (opts->args_free)
            opts->args_free(args);
        return rc;
    }
    cell->sys = sys;
    cell->behaviour = behaviour;
    cell->args = args;
    cell->opts = *opts;
    cell->guardian = guardian;
    memcpy(cell->path, path, strlen(path) + 1);
    cell->restart_times = calloc((size_t)opts->supervision.max_restarts + 1, sizeof(int64_t));
    rc = cell->restart_times ? fq_registry_add(sys->registry, cell->path, &cell->entry) : FQ_ENOMEM;
    if (rc == 0) {
        cell->mailbox = zsock_new(ZMQ_PULL);
        if (!cell->mailbox)
            rc = FQ_ENOMEM;
    }
    if (rc == 0) {
        int hwm = opts->mailbox_hwm > 0 ? opts->mailbox_hwm : sys->config.mailbox_hwm;
        zsock_set_rcvhwm(cell->mailbox, hwm);
        if (zsock_bind(cell->mailbox, "%s", cell->entry->endpoint) != 0)
            rc = FQ_EEXIST;
    }
    if (rc) {
        fq_cell_destroy(&cell, NULL, false, "spawn failed");
        return rc;
    }
    *cell_p = cell;
    return 0;
}

int fq_cell_start(fq_cell_t *cell)
{
    cell->actor = zactor_new(fq_actor_main, cell);
    return cell->actor ? 0 : FQ_ENOMEM;
}

//  Counts and discards what is left in a retired mailbox.
static void s_drain_dead_letters(fq_cell_t *cell)
{
    uint64_t dropped = 0;
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (zmq_msg_recv(&frame, zsock_resolve(cell->mailbox), ZMQ_DONTWAIT) >= 0)
        dropped++;
    zmq_msg_close(&frame);
    if (dropped)
        atomic_fetch_add(&cell->sys->dead_letters, dropped);
}

void fq_cell_destroy(fq_cell_t **cell_p, fq_outbox_t *outbox, bool failed, const char *reason)
{
    fq_cell_t *cell = *cell_p;
    if (!cell)
        return;
    *cell_p = NULL;
    zactor_destroy(&cell->actor);
    zlistx_t *watchers = cell->entry ? fq_registry_remove(cell->sys->registry, cell->entry) : NULL;
    if (cell->mailbox) {
        s_drain_dead_letters(cell);
        //  Unbind before closing: a close frees an inproc endpoint only
        //  later, in ZeroMQ's reaper thread, and the same path spawned again
        //  at once (a restarted parent's child, a respawn after TERMINATED)
        //  would find its endpoint taken and fail with FQ_EEXIST.
        zsock_unbind(cell->mailbox, "%s", cell->entry->endpoint);
        zsock_destroy(&cell->mailbox);
    }
    if (watchers && outbox) {
        fq_terminated_t notice = {.path = cell->path, .failed = failed, .reason = reason};
        for (const char *watcher = zlistx_first(watchers); watcher; watcher = zlistx_next(watchers))
            fq_outbox_send(outbox, watcher, FQ_MSG_TERMINATED, 0, 0, cell->path,
                           &fq_terminated_desc, &notice, NULL);
    }
    zlistx_destroy(&watchers);
    if (cell->opts.args_free)
        cell->opts.args_free(cell->args);
    fq_entry_release(&cell->entry);
    free(cell->restart_times);
    free(cell);
}
