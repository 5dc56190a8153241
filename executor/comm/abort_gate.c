/* abort_gate.c - the abort gate of one rank's communicators (abort_gate.h). */
#include "executor/comm/abort_gate.h"

/* Sequentially consistent compare-and-swap of g->state from *from to to. */
static bool cas(zb_abort_gate *g, int *from, int to) {
    return __atomic_compare_exchange_n(&g->state, from, to, false,
                                       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

bool zb_gate_enter(zb_abort_gate *g) {
    int free_ = ZB_GATE_FREE;
    return cas(g, &free_, ZB_GATE_BUSY);
}

bool zb_gate_leave(zb_abort_gate *g) {
    int busy = ZB_GATE_BUSY;
    if (cas(g, &busy, ZB_GATE_FREE)) return false;
    /* only an abort moves a BUSY gate: it is PENDING, and ours to end */
    __atomic_store_n(&g->state, ZB_GATE_DEAD, __ATOMIC_SEQ_CST);
    return true;
}

bool zb_gate_claim(zb_abort_gate *g) {
    for (;;) {
        int s = __atomic_load_n(&g->state, __ATOMIC_SEQ_CST);
        if (s == ZB_GATE_PENDING || s == ZB_GATE_DEAD) return false;
        int to = s == ZB_GATE_FREE ? ZB_GATE_DEAD : ZB_GATE_PENDING;
        if (cas(g, &s, to)) return to == ZB_GATE_DEAD;
        /* the owner entered or left meanwhile: look again */
    }
}

int zb_gate_state(zb_abort_gate *g) {
    return __atomic_load_n(&g->state, __ATOMIC_SEQ_CST);
}
