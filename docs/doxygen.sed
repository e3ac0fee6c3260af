# Doxygen input filter for include/mhsa.h (used by docs/Doxyfile.in): the
# header's plain /* */ comments become doc comments, without changing the
# header's own style.
# - the opening comment documents the file;
1s|^/\* |/** @file mhsa.h\n * |
# - section rules ("/* ---- Kernel dispatch ---- */") stay plain comments;
/^\/\* ----/b
# - a comment starting a line documents what follows it;
s|^\([[:space:]]*\)/\* |\1/** |
# - a comment after a declaration, enum value or field documents it.
s|\([;,{][[:space:]]*\)/\* |\1/**< |
