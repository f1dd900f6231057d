/**
 * `cudagraph/model`: the CPU model alone (StreamCapture, ComputeGraph, schedules, the builder, the
 * multi-device model) and the errors it throws. It loads no binding code: no koffi, no driver
 * loader, no addon (test/model/entry.test.ts checks the import graph), so a program that only
 * plans, draws or tests graphs pays for nothing else.
 */
export * from '../errors/index.js';
export * from '../model/index.js';
