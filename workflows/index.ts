export { ping } from './ping';
