/* libuwarp: the library is its parts (runtime/, rdmap/, ddp/, mpa/); this file only
 * gives the shared object a translation unit of its own. */
