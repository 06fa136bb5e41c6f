// Giving freed malloc memory back to the kernel (native/malloc_trim.h says why glibc keeps it).
import { addon } from './addon.js';

export const mallocTrim: () => boolean = () => addon.mallocTrim();
