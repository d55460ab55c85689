/*  fq_metrics_holds.c — operators' holds for /metrics (fq_metrics_holds.h). */
#include "fq_metrics_holds.h"
#include "fq_buf.h"
#include <stdlib.h>
#include <string.h>

char *fq_metrics_holds_render(char *text, const fq_hold_list_t *holds)
{
    if (!text || !holds)
        return text;
    fq_buf_t buf = {0};
    bool all = false;
    for (size_t i = 0; i < holds->count; i++)
        all |= holds->rows[i].scope == FQ_HOLD_ALL;
    int rc = fq_buf_add_str(&buf, text);
    rc |= fq_buf_printf(&buf,
                        "# HELP fairq_held_all 1 while an operator holds every message\n"
                        "# TYPE fairq_held_all gauge\n"
                        "fairq_held_all %d\n",
                        all ? 1 : 0);
    bool first = true;
    for (size_t i = 0; i < holds->count; i++) {
        if (holds->rows[i].scope != FQ_HOLD_DESTINATION)
            continue;
        if (first)
            rc |= fq_buf_add_str(
                &buf, "# HELP fairq_destination_held 1 while an operator holds the destination\n"
                      "# TYPE fairq_destination_held gauge\n");
        first = false;
        //  A destination's name is a-z 0-9 _ . - (0016): nothing to escape
        rc |= fq_buf_printf(&buf, "fairq_destination_held{destination=\"%s\"} 1\n",
                            holds->rows[i].name);
    }
    free(text);
    if (rc) {
        fq_buf_free(&buf);
        return NULL;
    }
    return fq_buf_take(&buf);
}
