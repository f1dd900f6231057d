export { StreamId, CaptureEvent, NodeId } from './ids.js';
