/*  fq_cli_commands.h — the commands of fairq, each defined beside its code
    and listed, in the order `fairq --help` shows them, by fairq.c.
*/
#ifndef FQ_CLI_COMMANDS_H
#define FQ_CLI_COMMANDS_H

#include "fq_cli.h"

//  fq_cli_commands_submit.c
extern const fq_cli_command_t fq_cli_cmd_submit;

//  fq_cli_commands_requests.c
extern const fq_cli_command_t fq_cli_cmd_status;
extern const fq_cli_command_t fq_cli_cmd_list;
extern const fq_cli_command_t fq_cli_cmd_cancel;
extern const fq_cli_command_t fq_cli_cmd_pause;
extern const fq_cli_command_t fq_cli_cmd_resume;
extern const fq_cli_command_t fq_cli_cmd_reschedule;
extern const fq_cli_command_t fq_cli_cmd_rejects;

//  fq_cli_commands_messages.c
extern const fq_cli_command_t fq_cli_cmd_search;
extern const fq_cli_command_t fq_cli_cmd_message;
extern const fq_cli_command_t fq_cli_cmd_retry;
extern const fq_cli_command_t fq_cli_cmd_errors;

//  fq_cli_commands_events.c
extern const fq_cli_command_t fq_cli_cmd_events;

//  fq_cli_commands_tenants.c
extern const fq_cli_command_t fq_cli_cmd_tenants;
extern const fq_cli_command_t fq_cli_cmd_tenants_show;
extern const fq_cli_command_t fq_cli_cmd_tenants_set;
extern const fq_cli_command_t fq_cli_cmd_tenants_token;
extern const fq_cli_command_t fq_cli_cmd_tenants_tokens;
extern const fq_cli_command_t fq_cli_cmd_tenants_revoke;
extern const fq_cli_command_t fq_cli_cmd_health;

//  fq_cli_commands_destinations.c
extern const fq_cli_command_t fq_cli_cmd_destinations;
extern const fq_cli_command_t fq_cli_cmd_destinations_show;
extern const fq_cli_command_t fq_cli_cmd_destinations_set;
extern const fq_cli_command_t fq_cli_cmd_destinations_delete;

//  fq_cli_commands_holds.c
extern const fq_cli_command_t fq_cli_cmd_holds;
extern const fq_cli_command_t fq_cli_cmd_hold_tenant;
extern const fq_cli_command_t fq_cli_cmd_hold_destination;
extern const fq_cli_command_t fq_cli_cmd_hold_all;
extern const fq_cli_command_t fq_cli_cmd_release_tenant;
extern const fq_cli_command_t fq_cli_cmd_release_destination;
extern const fq_cli_command_t fq_cli_cmd_release_all;
//  fq_cli_commands_suppressions.c
extern const fq_cli_command_t fq_cli_cmd_suppressions;
extern const fq_cli_command_t fq_cli_cmd_suppressions_list;
extern const fq_cli_command_t fq_cli_cmd_suppressions_add;
extern const fq_cli_command_t fq_cli_cmd_suppressions_remove;
extern const fq_cli_command_t fq_cli_cmd_suppressions_import;

//  fq_cli_commands_shape.c
extern const fq_cli_command_t fq_cli_cmd_shape;

//  fq_cli_commands_bulk.c
extern const fq_cli_command_t fq_cli_cmd_messages_cancel;
extern const fq_cli_command_t fq_cli_cmd_messages_retry;
extern const fq_cli_command_t fq_cli_cmd_messages_reschedule;

//  fq_cli_commands_webhooks.c
extern const fq_cli_command_t fq_cli_cmd_webhooks;
extern const fq_cli_command_t fq_cli_cmd_webhooks_list;
extern const fq_cli_command_t fq_cli_cmd_webhooks_add;
extern const fq_cli_command_t fq_cli_cmd_webhooks_show;
extern const fq_cli_command_t fq_cli_cmd_webhooks_set;
extern const fq_cli_command_t fq_cli_cmd_webhooks_rotate;
extern const fq_cli_command_t fq_cli_cmd_webhooks_remove;

//  fq_cli_commands_schedules.c
extern const fq_cli_command_t fq_cli_cmd_schedules;
extern const fq_cli_command_t fq_cli_cmd_schedules_list;
extern const fq_cli_command_t fq_cli_cmd_schedules_add;
extern const fq_cli_command_t fq_cli_cmd_schedules_show;
extern const fq_cli_command_t fq_cli_cmd_schedules_pause;
extern const fq_cli_command_t fq_cli_cmd_schedules_resume;
extern const fq_cli_command_t fq_cli_cmd_schedules_remove;

//  fq_cli_commands_feedback.c
extern const fq_cli_command_t fq_cli_cmd_feedback;

//  fq_cli_top.c
extern const fq_cli_command_t fq_cli_cmd_top;

//  ---------------------------------------------------------------------
//  Shared by the commands (fq_cli_commands_requests.c)

//  The request object, for people: one line per counter and time.
void fq_cli_print_request(const json_t *request);

//  One line: "request 42 (acme) cancelled: 1000 total, 95 sent, ...".
void fq_cli_print_request_line(const json_t *request);

//  Follows a request until it is finished (status --watch; submit
//  --watch), polling every interval_s. Returns the exit code: 0 when
//  every recipient was sent, FQ_CLI_EXIT_FAILED when some were not (dead,
//  cancelled, rejected), or the code of an error that did not go away.
int fq_cli_watch(fq_cli_t *cli, int64_t id, double interval_s);

//  The path of a request or message: "/v1/requests/42" and suffix.
void fq_cli_request_path(char *path, size_t size, const char *kind, int64_t id, const char *suffix);

#endif
