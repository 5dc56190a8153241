/* corpus.S - the built-in text corpus (models/data/corpus.txt) inside the
 * zbrun binary: a text data path left empty trains on it (executor/state/data.h).
 * zb_corpus_text .. zb_corpus_end are its bytes. */
    .section .rodata
    .global zb_corpus_text
    .global zb_corpus_end
    .balign 16
zb_corpus_text:
    .incbin "models/data/corpus.txt"
zb_corpus_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
