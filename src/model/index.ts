export { StreamId, CaptureEvent, NodeId } from './ids.js';
export { CaptureStatus } from './capture-status.js';
