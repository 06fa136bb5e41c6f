// Giving freed memory back: malloc's to the kernel (native/malloc_trim.h says why glibc keeps it), and
// V8's heap, young generation included (native/memory_pressure.h).
import { addon } from './addon.js';

export const mallocTrim: () => boolean = () => addon.mallocTrim();

export const collectGarbageForMemory: () => void = () => addon.collectGarbageForMemory();
